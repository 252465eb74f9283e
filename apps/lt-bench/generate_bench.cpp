// lt-bench generate: images/s and memory of pixel-by-pixel sampling with the
// recurrent form (linear attention: constant state) against a KV cache
// (softmax: a cache that grows with every step), for the paper's MNIST and
// CIFAR-10 shapes with random weights, at several batch sizes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "benchmarks.h"
#include "precision_options.h"
#include "lt/error.h"
#include "lt/image_model.h"

namespace lt::bench {
namespace {

// Positions to time: all of 0..L-1, or `steps` of them spread evenly. A
// step's cost depends only on its position (constant for the recurrent
// state, growing with t for the KV cache), so the mean over evenly spread
// positions times L is the cost of the whole image.
std::vector<int64_t> timed_positions(int64_t L, int64_t steps) {
  std::vector<int64_t> t;
  if (steps <= 0 || steps >= L) {
    for (int64_t i = 0; i < L; ++i) t.push_back(i);
  } else {
    for (int64_t i = 0; i < steps; ++i) t.push_back((2 * i + 1) * L / (2 * steps));
  }
  return t;
}

}  // namespace

void run_generate_bench(const GenerateBenchOptions& o, Writer& out) {
  for (int64_t b : o.batches) check(b >= 1, "batch sizes must be >= 1, got " + std::to_string(b));
  std::vector<AttentionKind> kinds;
  for (const std::string& a : o.attentions) kinds.push_back(image_attention(a));
  for (const std::string& dname : o.devices) {
    Device dev = parse_device(dname);
    require_device(dev);
    check(dev == Device::cpu || !o.openblas, "--openblas is a CPU option");
    for (const std::string& shape : o.shapes) {
      for (AttentionKind kind : kinds) {
        const ImageModelConfig c = bench_model_config(shape, kind, o.layers, o.d_model, o.heads);
        memory_reset_peak(dev);
        const size_t base = memory_in_use(dev);
        ImageModel model(c, dev);
        model.init_parameters(7);
        const Precision precision = app::generation_precision(o.bf16, o.tf32, dev);
        model.core().prepare_step(precision, /*pack_weights=*/!o.openblas);
        const size_t weights = memory_in_use(dev) - base;
        const int64_t L = c.sequence_length();
        for (int64_t B : o.batches) {
          const double state_bytes = double(model.core().state_numel(B, precision.state)) * 4;
          Row row = environment_row(dname, num_threads());
          row.set("shape", shape).set("attention", kind == AttentionKind::softmax ? "softmax-kv" : "linear");
          row.set("layers", c.transformer.layers).set("d_model", c.transformer.d_model);
          row.set("heads", c.transformer.heads).set("subpixels", c.subpixels()).set("batch", B);
          row.set("precision", products_name(precision.products));
          row.set("state", precision.state == DType::bf16 ? "bf16" : "fp32");
          if (dev == Device::cpu) row.set("products", o.openblas ? "openblas" : "packed");
          if (state_bytes > o.max_memory_gb * 1e9) {
            if (o.verbose)
              std::cerr << "generate " << shape << " " << attention_name(kind) << " batch " << B
                        << ": skipped, the state needs " << state_bytes / 1e9 << " GB\n";
            continue;
          }
          std::vector<int64_t> positions = timed_positions(L, o.steps);
          std::vector<double> rate;
          size_t peak = 0;
          for (int r = 0; r < o.repetitions + 1; ++r) {  // the first run plans buffers and warms up
            memory_reset_peak(dev);
            RecurrentState state = model.new_state(B, precision.state);
            Tensor head = Tensor::empty({B, c.head_width()}, dev);
            std::vector<int32_t> first(B);
            std::mt19937 gen{uint32_t(r)};
            for (auto& x : first) x = int32_t(gen() % 256);
            Tensor tokens = Tensor::from_vector(first, {B}).to(dev);
            synchronize(dev);
            auto t0 = std::chrono::steady_clock::now();
            for (int64_t t : positions) {
              model.step(state, tokens, t, head);
              model.sample(head, 11, t, tokens);
            }
            synchronize(dev);
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            double per_image = s / double(positions.size()) * double(L) / double(B);
            if (r > 0) rate.push_back(1.0 / per_image);
            peak = std::max(peak, memory_peak(dev) - base);
          }
          Stats ips = Stats::of(rate);
          row.set("images_per_s", ips.mean).set("images_per_s_std", ips.stddev);
          row.set("ms_per_step", double(B) / ips.mean / double(L) * 1e3);
          row.set("state_mb_per_image", state_bytes / double(B) / 1e6);
          row.set("peak_mb", double(peak) / 1e6).set("weights_mb", double(weights) / 1e6);
          row.set("timed_steps", int64_t(positions.size())).set("repetitions", o.repetitions);
          out.add(row);
          if (o.verbose)
            std::cerr << "generate " << shape << " " << attention_name(kind) << " batch " << B << ": "
                      << Writer::plus_minus(ips.mean, ips.stddev) << " images/s, "
                      << state_bytes / double(B) / 1e6 << " MB state/image\n";
        }
      }
    }
  }
}

}  // namespace lt::bench
