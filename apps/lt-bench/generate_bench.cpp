// lt-bench generate: images/s and memory of pixel-by-pixel sampling with the
// recurrent form (linear attention: constant state) against a KV cache
// (softmax: a cache that grows with every step) and against recomputation
// (Reformer's LSH attention, which has no recurrent form: every step is a
// parallel pass over the whole prefix, as the paper timed it), for the
// paper's MNIST and CIFAR-10 shapes with random weights, at several batch sizes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "benchmarks.h"
#include "common/error.h"
#include "core/precision_flags.h"
#include "model/image_model.h"

namespace lt::bench {
namespace {

// Positions to time: all of 0..L-1, or `steps` of them spread evenly. A
// step's cost depends only on its position (constant for the recurrent
// state, growing with t for the KV cache and for recomputation), so the
// mean over evenly spread positions times L is the cost of the whole image.
std::vector<int64_t> timed_positions(int64_t L, int64_t steps) {
  std::vector<int64_t> t;
  if (steps <= 0 || steps >= L) {
    for (int64_t i = 0; i < L; ++i) t.push_back(i);
  } else {
    for (int64_t i = 0; i < steps; ++i) t.push_back((2 * i + 1) * L / (2 * steps));
  }
  return t;
}

// Seconds of one run over the positions for B random images: a step of the
// recurrent state each, or a parallel pass over subpixels 0..t for position t.
double time_run(ImageModel& model, bool recompute, const Precision& precision, int64_t B,
                const std::vector<int64_t>& positions, uint32_t run) {
  const ImageModelConfig& c = model.config();
  const Device dev = model.core().device();
  const int64_t S = c.subpixels();
  std::mt19937 gen{run};
  std::vector<int32_t> images(B * S), prefix;
  for (auto& x : images) x = int32_t(gen() % 256);
  RecurrentState state;
  if (!recompute) state = model.core().new_state(B, precision.state);
  Tensor head = Tensor::empty({B, c.head_width()}, dev);
  Tensor tokens = Tensor::from_vector(std::vector<int32_t>(images.begin(), images.begin() + B), {B}).to(dev);
  synchronize(dev);
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t t : positions) {
    if (recompute) {
      prefix.resize(B * (t + 1));
      for (int64_t b = 0; b < B; ++b)
        std::copy(images.begin() + b * S, images.begin() + b * S + t + 1, prefix.begin() + b * (t + 1));
      model.recompute_head(prefix, B, head, precision);
    } else {
      state.position = t;  // a step costs what its position costs, whatever the state holds
      model.core().step(state, tokens, head);
    }
    model.sample(head, 11, t, tokens);
  }
  synchronize(dev);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// How a row samples, and its attention as the rows have named it.
const char* sampling_name(const TransformerConfig& t) {
  if (!t.has_recurrent_form()) return "recompute";
  return t.attention == AttentionKind::softmax ? "kv-cache" : "recurrent";
}
std::string row_attention(const TransformerConfig& t) {
  if (t.attention == AttentionKind::softmax) return "softmax-kv";
  return t.attention == AttentionKind::linear ? "linear" : attention_name(t);
}

}  // namespace

void run_generate_bench(const GenerateBenchOptions& o, Writer& out) {
  for (int64_t b : o.batches) check(b >= 1, "batch sizes must be >= 1, got " + std::to_string(b));
  std::vector<std::string> attentions;
  for (const std::string& a : o.attentions) attentions.push_back(image_attention(a));
  for (const std::string& dname : o.devices) {
    Device dev = parse_device(dname);
    require_device(dev);
    check(dev == Device::cpu || !o.openblas, "--openblas is a CPU option");
    check(!o.openblas || !o.bf16, "--openblas multiplies in fp32: it cannot be combined with --bf16");
    set_cuda_graphs(o.cuda_graphs);
    for (const std::string& shape : o.shapes) {
      for (const std::string& attention : attentions) {
        const ImageModelConfig c = bench_model_config(shape, attention, o.layers, o.d_model, o.heads);
        const bool recompute = !c.transformer.has_recurrent_form();
        if (recompute && dev != Device::cpu) {
          if (o.verbose) std::cerr << attention << " on " << dname << ": skipped, LSH attention runs on the CPU only\n";
          continue;
        }
        memory_reset_peak(dev);
        const size_t base = memory_in_use(dev);
        ImageModel model(c, dev);
        model.core().init_parameters(7);
        const Precision precision = generation_precision(o.bf16, o.tf32, dev);
        if (!recompute) model.core().prepare_step(precision, /*pack_weights=*/!o.openblas);
        const size_t weights = memory_in_use(dev) - base;
        const int64_t L = c.sequence_length();
        for (int64_t B : o.batches) {
          const double state_bytes = recompute ? 0.0 : double(model.core().state_numel(B, precision.state)) * 4;
          const std::string name = row_attention(c.transformer);
          Row row = environment_row(dname, num_threads());
          row.set("shape", shape).set("attention", name).set("sampling", sampling_name(c.transformer));
          row.set("layers", c.transformer.layers).set("d_model", c.transformer.d_model);
          row.set("heads", c.transformer.heads).set("subpixels", c.subpixels()).set("batch", B);
          row.set("precision", products_name(precision.products));
          row.set("state", recompute ? "none" : precision.state == DType::bf16 ? "bf16" : "fp32");
          // Recomputation's forward pass multiplies through sgemm (fp32) or lt's bf16 kernel.
          if (dev == Device::cpu)
            row.set("products", recompute ? (o.bf16 ? "bf16-gemm" : "openblas") : o.openblas ? "openblas" : "packed");
          else
            row.set("cuda_graphs", o.cuda_graphs);
          if (state_bytes > o.max_memory_gb * 1e9) {
            if (o.verbose)
              std::cerr << "generate " << shape << " " << name << " batch " << B << ": skipped, the state needs "
                        << state_bytes / 1e9 << " GB\n";
            continue;
          }
          const std::vector<int64_t> positions = timed_positions(L, o.steps);
          std::vector<double> rate;
          size_t peak = 0;
          for (int r = 0; r < o.repetitions + 1; ++r) {  // the first run plans buffers and warms up
            memory_reset_peak(dev);
            const double s = time_run(model, recompute, precision, B, positions, uint32_t(r));
            const double per_image = s / double(positions.size()) * double(L) / double(B);
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
            std::cerr << "generate " << shape << " " << name << " (" << sampling_name(c.transformer) << ") batch "
                      << B << ": " << Writer::plus_minus(ips.mean, ips.stddev) << " images/s, "
                      << double(peak) / 1e6 << " MB peak\n";
        }
      }
    }
  }
}

}  // namespace lt::bench
