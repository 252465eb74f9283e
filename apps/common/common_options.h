// The rows of --help that several tools share, declared once: device,
// threads, precision, seed and model path mean the same in every tool.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "command_line.h"

namespace lt::app {

inline CLI::Option* add_device_option(CLI::App& app, std::string& device) {
  return app.add_option("-d,--device", device, "cpu or cuda")->capture_default_str();
}

inline CLI::Option* add_threads_option(CLI::App& app, int& threads) {
  return app.add_option("-t,--threads", threads, "CPU threads (0: all cores)")->capture_default_str()->check(kNonNegative);
}

// --bf16 and --tf32, which lt.h takes as a precision name (precision_name below).
enum class PrecisionUse { generation, training, recognition };
inline void add_precision_flags(CLI::App& app, bool& bf16, bool& tf32, PrecisionUse use) {
  if (use == PrecisionUse::generation)
    app.add_flag("--bf16", bf16,
                 "cpu: bf16 matrix products (fp32 sums) and recurrent state (AVX512_BF16; ~1.5x the images/s, ~3e-3 "
                 "relative error per product); cuda: the recurrent state in bf16 (half its memory traffic); the "
                 "output head stays fp32");
  else if (use == PrecisionUse::training)
    app.add_flag("--bf16", bf16,
                 "cpu, AVX512_BF16: the transformer's products in bf16 with fp32 sums (the output head stays fp32); "
                 "with --eval --recurrent the step's products and state (cuda: the state)");
  else
    app.add_flag("--bf16", bf16,
                 "cpu, AVX512_BF16: the encoder's products in bf16 with fp32 sums (the output head and a stream's "
                 "state stay fp32)");
  app.add_flag("--tf32", tf32,
               "cuda: the linear layers' products in TF32 on the tensor cores (~3e-4 relative error), and causal "
               "linear attention's parallel form (training, offline) in chunks on them");
}

// The flags as lt.h names a precision (lt_model_options, lt_recognizer_options).
inline const char* precision_name(bool bf16, bool tf32) {
  return bf16 && tf32 ? "bf16+tf32" : bf16 ? "bf16" : tf32 ? "tf32" : "fp32";
}

// The sampling seed of lt-sample-image and lt-complete.
inline CLI::Option* add_sampling_seed_option(CLI::App& app, uint64_t& seed) {
  return app.add_option("-s,--seed", seed, "random seed (default: a fresh one, printed)")->check(kUnsigned);
}

// A checkpoint to read, defaulting to a shipped model.
inline CLI::Option* add_model_option(CLI::App& app, std::string& model, const std::string& shipped) {
  return app.add_option("-m,--model", model,
                        "checkpoint (default: " + shipped + " in $LT_WEIGHTS if set, else the shipped weights/)")
      ->check(kNonEmpty);
}

}  // namespace lt::app
