// lt-bench: shell-scriptable benchmarks reproducing the paper's speed and
// memory claims. Rows go to stdout (md, csv, json, jsonl); progress to stderr.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>

#include "backend/device.h"
#include "background_load.h"
#include "benchmarks.h"
#include "command_line.h"
#include "common/error.h"
#include "common_options.h"
#include "process_setup.h"
#include "train/world.h"

namespace {

lt::bench::BackgroundLoad* g_load = nullptr;  // made before the libraries load, owned by main

void setup_process(int argc, char** argv, char** envp) {
  environ = envp;  // as prepare_process: the load reads and writes LT_BACKGROUND_PIDS
  // The load first: the look at how busy the machine is then sees it.
  g_load = new lt::bench::BackgroundLoad(lt::bench::BackgroundLoad::requested(argc, argv));
  // The training benchmarks take lt-train's choice of threads on a busy machine.
  bool training = false;
  for (int i = 1; i < argc; ++i)
    training |= std::strcmp(argv[i], "train") == 0 || std::strcmp(argv[i], "speech") == 0;
  lt::app::prepare_process(training ? lt::app::UnderLoad::all_cores : lt::app::UnderLoad::free_cores, argv, environ);
}

}  // namespace

LT_BEFORE_LIBRARIES(setup_process);

int main(int argc, char** argv) {
  const std::unique_ptr<lt::bench::BackgroundLoad> load(g_load);
  CLI::App app{"lt-bench: speed and memory benchmarks of linear transformers"};
  app.require_subcommand(1);
  app.fallthrough();  // -f, -t, -q may follow the subcommand too
  std::string format = "md";
  int threads = 0;
  bool quiet = false, tf32 = false;
  int background = 0;
  app.add_option("-f,--format", format, "output format: md, csv, json, jsonl")->capture_default_str()->check(CLI::IsMember({"md", "csv", "json", "jsonl"}));
  lt::app::add_threads_option(app, threads);
  app.add_flag("-q,--quiet", quiet, "no progress on stderr");
  app.add_flag("--tf32", tf32, "cuda: matrix products in TF32 on the tensor cores, and causal linear attention's chunks (default: full fp32)");
  app.add_option("--background-load", background, "run this many busy processes beside the benchmark, started before anything else (a shared machine)")->capture_default_str()->check(CLI::Range(0, 64));

  lt::bench::AttentionBenchOptions att;
  CLI::App* attention = app.add_subcommand("attention", "forward+backward time and peak memory per sample vs sequence length (paper Figure 1)");
  attention->add_option("-a,--attention", att.kinds, "softmax, causal-softmax, linear, causal-linear, favor (FAVOR+ features), causal-favor, lsh-1, lsh-4 (Reformer, 1 or 4 hashing rounds; CPU only), causal-lsh-1, causal-lsh-4 or all")->capture_default_str();
  attention->add_option("-d,--device", att.devices, "cpu and/or cuda")->capture_default_str();
  attention->add_option("--min-length", att.min_length, "shortest sequence (doubling up to --max-length)")->capture_default_str()->check(lt::app::kPositive);
  attention->add_option("--max-length", att.max_length, "longest sequence")->capture_default_str()->check(lt::app::kPositive);
  attention->add_option("--tokens", att.tokens, "tokens per batch: batch = tokens / N")->capture_default_str()->check(lt::app::kPositive);
  attention->add_option("--heads", att.heads, "attention heads")->capture_default_str()->check(lt::app::kPositive);
  attention->add_option("--head-dim", att.head_dim, "query/value dimension per head")->capture_default_str()->check(lt::app::kPositive);
  attention->add_option("-r,--repetitions", att.repetitions, "timed repetitions after one warm-up")->capture_default_str()->check(lt::app::kPositive);
  attention->add_option("--max-memory", att.max_memory_gb, "skip cases needing more than this many GB")->capture_default_str()->check(lt::app::kPositiveReal);

  lt::bench::GenerateBenchOptions gen;
  CLI::App* generate = app.add_subcommand("generate", "images/s and memory of recurrent (linear) vs KV-cache (softmax) vs recomputing (Reformer) sampling vs batch size");
  generate->add_option("--shape", gen.shapes, "mnist (8 layers, 784 steps) and/or cifar (16 layers, 3072 steps)")->capture_default_str();
  generate->add_option("-a,--attention", gen.attentions, "linear (recurrent state), softmax (KV cache), lsh-1, lsh-4 (Reformer, no recurrent form: every step recomputes the prefix; CPU only)")->capture_default_str();
  generate->add_option("-b,--batch", gen.batches, "batch sizes")->capture_default_str()->check(lt::app::kPositive);
  generate->add_option("-d,--device", gen.devices, "cpu and/or cuda")->capture_default_str();
  generate->add_option("--steps", gen.steps, "time this many positions spread over the image and extrapolate (0: every step)")->capture_default_str()->check(lt::app::kNonNegative);
  generate->add_option("--layers", gen.layers, "override the shape's layers")->capture_default_str()->check(lt::app::kNonNegative);
  generate->add_option("--d-model", gen.d_model, "override the width (head dim = width / heads)")->capture_default_str()->check(lt::app::kNonNegative);
  generate->add_option("--heads", gen.heads, "override the number of heads")->capture_default_str()->check(lt::app::kNonNegative);
  generate->add_option("-r,--repetitions", gen.repetitions, "timed runs after one warm-up")->capture_default_str()->check(lt::app::kPositive);
  auto* bf16 = generate->add_flag("--bf16", gen.bf16, "the linear state in bf16, and on the cpu the step's matrix products too (fp32 sums, AVX512_BF16; default: fp32)");
  generate->add_flag("--openblas", gen.openblas, "cpu: the step's products through OpenBLAS instead of weights packed once (for comparison)")
      ->excludes(bf16);
  generate->add_flag("!--no-cuda-graphs", gen.cuda_graphs, "cuda: launch every kernel of each step instead of replaying the stack's recorded launches (for comparison)");
  generate->add_option("--max-memory", gen.max_memory_gb, "skip batches whose state needs more than this many GB")->capture_default_str()->check(lt::app::kPositiveReal);

  lt::bench::TrainBenchOptions tr;
  CLI::App* train = app.add_subcommand("train", "training examples/s and dense-layer GFLOP/s against the sgemm rate");
  train->add_option("--shape", tr.shapes, "mnist and/or cifar")->capture_default_str();
  train->add_option("-a,--attention", tr.attention, "causal-linear, softmax or lsh-N")->capture_default_str();
  train->add_option("-b,--batch", tr.batch, "batch size (0: the paper's, 16 mnist / 10 cifar)")->capture_default_str()->check(lt::app::kNonNegative);
  train->add_option("--layers", tr.layers, "override the shape's layers")->capture_default_str()->check(lt::app::kNonNegative);
  train->add_option("--d-model", tr.d_model, "override the width (head dim = width / heads)")->capture_default_str()->check(lt::app::kNonNegative);
  train->add_option("--heads", tr.heads, "override the number of heads")->capture_default_str()->check(lt::app::kNonNegative);
  train->add_option("-d,--device", tr.devices, "cpu and/or cuda")->capture_default_str();
  train->add_option("-r,--repetitions", tr.repetitions, "timed steps after one warm-up")->capture_default_str()->check(lt::app::kPositive);
  train->add_option("--gpu-sum", tr.gpu_sum, "under mpirun with -d cuda: nccl or host, as lt-train's")->capture_default_str()->check(CLI::IsMember({"nccl", "host"}));
  train->add_flag("--bf16", tr.bf16, "cpu: the linear layers' products in bf16 with fp32 sums, forward and backward (AVX512_BF16; default: fp32)");

  lt::bench::SpeechBenchOptions sp;
  CLI::App* speech = app.add_subcommand("speech", "training time of the paper's speech encoder (CTC) per attention and frame rate (paper Table 3)");
  speech->add_option("-a,--attention", sp.attentions, "linear, softmax (bidirectional), causal-linear, causal-softmax, or bilstm (the Bi-LSTM encoder instead of the transformer)")->capture_default_str();
  speech->add_option("--frame-stack", sp.stacks, "10 ms frames per encoder position")->capture_default_str()->check(CLI::Range(1, 16));
  speech->add_option("--frames", sp.frames, "10 ms frames per utterance")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("-b,--batch", sp.batch, "utterances per step")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("--layers", sp.layers, "encoder layers")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("--d-model", sp.d_model, "width (head dim = width / heads)")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("--heads", sp.heads, "attention heads")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("--lstm-layers", sp.lstm_layers, "bilstm: layers")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("--lstm-hidden", sp.lstm_hidden, "bilstm: hidden units per direction")->capture_default_str()->check(lt::app::kPositive);
  speech->add_option("--hours", sp.hours, "report an epoch of this many hours of audio")->capture_default_str()->check(lt::app::kPositiveReal);
  speech->add_option("-d,--device", sp.devices, "cpu and/or cuda")->capture_default_str();
  speech->add_option("-r,--repetitions", sp.repetitions, "timed steps after one warm-up")->capture_default_str()->check(lt::app::kPositive);
  speech->add_flag("--bf16", sp.bf16, "cpu: the linear layers' products in bf16 with fp32 sums (AVX512_BF16)");

  lt::bench::AsrBenchOptions asr;
  CLI::App* recognition = app.add_subcommand("asr", "real-time factor of offline and streaming recognition, front end / encoder / decoder apart, stream memory");
  recognition->add_option("--mode", asr.modes, "offline and/or stream")->capture_default_str();
  recognition->add_option("-m,--model", asr.model, "speech model (default: a random model of --layers/--d-model/--heads, bidirectional offline, causal-linear streaming)")->check(lt::app::kNonEmpty);
  recognition->add_option("--layers", asr.layers, "random model's layers")->capture_default_str()->check(lt::app::kPositive);
  recognition->add_option("--d-model", asr.d_model, "random model's width (head dim = width / heads)")->capture_default_str()->check(lt::app::kPositive);
  recognition->add_option("--heads", asr.heads, "random model's heads")->capture_default_str()->check(lt::app::kPositive);
  recognition->add_option("--frame-stack", asr.stack, "random model's 10 ms frames per position")->capture_default_str()->check(CLI::Range(1, 16));
  recognition->add_option("--ff-conv", asr.ff_conv, "random models' feed-forward convolution taps, odd (0: none), as lt-train's --ff-conv")->capture_default_str()->check(lt::app::kNonNegative);
  recognition->add_option("--context", asr.context, "random model's context frames on each side of a position (the streaming model: before it only), as lt-train's default")->capture_default_str()->check(CLI::Range(0, 64));
  recognition->add_option("--seconds", asr.seconds, "offline: length of the recording")->capture_default_str()->check(lt::app::real_in(1.0, 3600.0));
  recognition->add_option("--stream-seconds", asr.stream_seconds, "stream: length of the stream (memory is read at 10 s and at the end)")->capture_default_str()->check(lt::app::real_in(10.0, 86400.0));
  recognition->add_option("--chunk-ms", asr.chunk_ms, "stream: audio arrives in pieces of this many ms")->capture_default_str()->check(lt::app::real_in(10.0, 10000.0));
  recognition->add_option("--beam", asr.beam, "CTC prefix beam width (1: greedy)")->capture_default_str()->check(CLI::Range(1, 1024));
  recognition->add_option("--thread-counts", asr.thread_counts, "CPU threads, one row each")->capture_default_str()->check(CLI::Range(1, 1024));
  recognition->add_option("-d,--device", asr.devices, "cpu and/or cuda")->capture_default_str();
  recognition->add_option("-r,--repetitions", asr.repetitions, "offline: timed runs after one warm-up")->capture_default_str()->check(lt::app::kPositive);
  recognition->add_flag("--bf16", asr.bf16, "cpu: the encoder's products in bf16 with fp32 sums (AVX512_BF16)");

  lt::bench::StreamsBenchOptions st;
  CLI::App* streams = app.add_subcommand("streams", "many live speech streams at real-time pace: streams held, lag of settled phones, memory per stream; batched vs each alone vs lt-asr processes (--images: image requests)");
  streams->add_option("--mode", st.modes, "batched (one stream group), alone (each stream stepped on its own, in one process), processes (lt-asr --stream each), saturated (one group, every stream pushed --chunk-ms before each step, as fast as the steps go: audio seconds a second)")->capture_default_str();
  streams->add_option("-n,--streams", st.streams, "concurrent streams (with --find: the first tried)")->capture_default_str()->check(lt::app::kPositive);
  streams->add_flag("--find", st.find, "search for the most streams that keep real time: doubling from --streams, then bisection");
  streams->add_option("--max-streams", st.max_streams, "--find tries no more")->capture_default_str()->check(lt::app::kPositive);
  streams->add_option("-m,--model", st.model, "streaming speech model (default: the shipped asr-stream.safetensors)")->check(lt::app::kNonEmpty);
  streams->add_option("--phone-lm", st.phone_lm, "phone n-gram model, or none (default: the shipped speech-phones.arpa.gz, as lt-asr)");
  streams->add_option("--audio", st.audio, "recordings the streams replay, looped (default: eight sentences spoken by espeak-ng)");
  streams->add_option("--seconds", st.seconds, "audio per stream")->capture_default_str()->check(lt::app::real_in(1.0, 3600.0));
  streams->add_option("--arrival", st.arrival, "streams start at random times within this many seconds")->capture_default_str()->check(lt::app::real_in(0.0, 3600.0));
  streams->add_option("--chunk-ms", st.chunk_ms, "audio arrives in pieces this long")->capture_default_str()->check(lt::app::real_in(10.0, 10000.0));
  streams->add_option("--interval-ms", st.interval_ms, "the compute loop steps at most this often: audio that arrives meanwhile joins the next step")->capture_default_str()->check(lt::app::kNonNegative);
  streams->add_option("--max-delay", st.max_delay, "seconds a decoder may hold a phone back (lt-asr's --max-delay)")->capture_default_str()->check(lt::app::real_in(0.001, 3600.0));
  streams->add_option("--beam", st.beam, "CTC beam width (lt-asr's default)")->capture_default_str()->check(CLI::Range(1, 1024));
  streams->add_option("--prune", st.prune, "the search does not extend a phone whose log-probability at a position is below this (lt-asr's --prune)")->capture_default_str()->check(lt::app::kFinite);
  streams->add_option("--lag-bound-ms", st.lag_bound_ms, "real time: p95 lag and every final result within this (0: --max-delay + 100 ms)")->capture_default_str()->check(lt::app::kNonNegative);
  streams->add_option("--images", st.images, "instead of speech: this many single-image requests arriving at random within --arrival, through a continuous image batch (--mode batched) and one at a time (alone)")->capture_default_str()->check(lt::app::kNonNegative);
  streams->add_option("--image-model", st.image_model, "image model for --images (default: the shipped mnist.safetensors)");
  streams->add_flag("--bf16", st.bf16, "cpu, AVX512_BF16: the encoder's (or image model's) products in bf16");
  streams->add_option("-d,--device", st.device, "cpu or cuda: where the group (or image batch) steps; processes run lt-asr on the CPU")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda"}));

  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-bench"); status >= 0) return status;
  try {
    lt::set_num_threads(threads);
    lt::check(!tf32 || !*attention || std::all_of(att.devices.begin(), att.devices.end(), [](const std::string& d) { return d == "cuda"; }),
              "--tf32 needs -d cuda: attention on the CPU is fp32");
    lt::check(!*attention || att.min_length <= att.max_length,
              "--min-length " + std::to_string(att.min_length) + " is above --max-length " + std::to_string(att.max_length));
    gen.tf32 = tr.tf32 = sp.tf32 = st.tf32 = att.tf32 = tf32;
    lt::bench::Writer writer(format);
    lt::bench::set_background_load(load->count());
    if (*attention) {
      att.verbose = !quiet;
      lt::bench::run_attention_bench(att, writer);
    } else if (*generate) {
      gen.verbose = !quiet;
      lt::bench::run_generate_bench(gen, writer);
    } else if (*train) {
      tr.verbose = !quiet;
      lt::bench::run_train_bench(tr, writer);
    } else if (*speech) {
      sp.verbose = !quiet;
      lt::check(sp.d_model % sp.heads == 0, "--d-model must be a multiple of --heads");
      lt::bench::run_speech_bench(sp, writer);
    } else if (*recognition) {
      asr.verbose = !quiet;
      lt::check(asr.d_model % asr.heads == 0, "--d-model must be a multiple of --heads");
      lt::bench::run_asr_bench(asr, writer);
    } else if (*streams) {
      st.verbose = !quiet;
      lt::bench::run_streams_bench(st, writer);
    }
    if (lt::World::get().leader()) writer.finish();  // under mpirun, rank 0 reports
  } catch (const std::exception& e) {
    lt::World& world = lt::World::get();
    std::cerr << "lt-bench: " << (world.size() > 1 ? world.describe() + ": " : "") << e.what() << "\n";
    if (world.size() > 1) world.abort(1);
    return 1;
  }
  return 0;
}
