// lt-bench train: training throughput of the paper's image models (forward,
// backward and a RAdam update on random images, the batch split over MPI
// ranks and CPU threads as lt-train does), the time of the ranks' gradient
// sum, and how close the dense layers come to the machine's own
// matrix-product rate, measured in the same run on the shape of the
// feed-forward layer. Under mpirun, rank 0 reports the world's rows.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

#include "benchmarks.h"
#include "common/error.h"
#include "core/precision_flags.h"
#include "model/image_model.h"
#include "ops/ops.h"
#include "train/image_training.h"
#include "train/trainer.h"
#include "train/world.h"

namespace lt::bench {
namespace {


// FLOPs of the matrix products of one training step (forward once, backward
// twice: input and weight gradients): the projections, the feed-forward
// layers and the predictor. Attention's own arithmetic is left out.
double dense_flops(const ImageModelConfig& c, int64_t B) {
  const double tokens = double(B) * double(c.sequence_length());
  const double d = double(c.transformer.d_model), ff = double(c.transformer.ff_dim);
  const double macs = double(c.transformer.layers) * (4 * d * d + 2 * d * ff) + d * double(c.head_width());
  return 2 * 3 * tokens * macs;
}

// Rate of one matrix product of the feed-forward shape [B*L, d] x [d, ff],
// through the library's linear op (sgemm, bf16_gemm or cuBLAS plus the bias).
double sgemm_gflops(const ImageModelConfig& c, int64_t B, Device dev, int repetitions, Products products) {
  std::mt19937 gen(3);
  const int64_t M = B * c.sequence_length(), K = c.transformer.d_model, N = c.transformer.ff_dim;
  Tensor x = random_tensor({M, K}, dev, gen), W = random_tensor({N, K}, dev, gen), b = random_tensor({N}, dev, gen);
  Tensor y = Tensor::empty({M, N}, dev);
  linear_forward(x, W, b, y, products);  // warm-up
  synchronize(dev);
  double best = 0;
  for (int r = 0; r < std::max(3, repetitions); ++r) {
    auto t0 = Clock::now();
    linear_forward(x, W, b, y, products);
    synchronize(dev);
    best = std::max(best, 2.0 * double(M) * double(K) * double(N) / seconds_since(t0) / 1e9);
  }
  return best;
}

}  // namespace

// Mean seconds of summing a gradient buffer over the ranks (0 where nothing
// is summed: one process, unless its GPU's sums go through NCCL).
double gradient_sum_seconds(Tensor grads, int repetitions) {
  World& world = World::get();
  if (world.size() == 1 && !(world.sums_with_nccl() && grads.device() == Device::cuda)) return 0;
  Tensor buffer = Tensor::empty(grads.shape(), grads.device());
  std::vector<double> t;
  for (int r = 0; r < repetitions + 1; ++r) {
    buffer.copy_from(grads);
    synchronize(grads.device());
    double go = 0;
    world.sum(&go, 1);  // start together
    const auto t0 = Clock::now();
    world.sum(buffer);
    synchronize(grads.device());
    if (r > 0) t.push_back(seconds_since(t0));
  }
  return Stats::of(t).mean;
}

void run_train_bench(const TrainBenchOptions& o, Writer& out) {
  const std::string attention = image_attention(o.attention);
  World& world = World::get();
  const bool report = world.leader();
  for (const std::string& dname : o.devices) {
    Device dev = parse_device(dname);
    require_device(dev);
    world.use_device(dev, o.gpu_sum == "host" ? World::GpuSum::host : World::GpuSum::nccl);
    ForwardOptions options;
    options.train = true;
    options.precision = training_precision(o.bf16, o.tf32, dev);
    for (const std::string& shape : o.shapes) {
      const ImageModelConfig c = bench_model_config(shape, attention, o.layers, o.d_model, o.heads);
      const int64_t B = o.batch > 0 ? o.batch : (shape == "cifar" ? 10 : 16);  // the paper's batches
      ImageModel model(c, dev);
      model.core().init_parameters(5);
      TrainOptions topt;
      topt.schedule.lr = 1e-4f;
      Trainer trainer(model.core().params(), topt);
      std::mt19937 gen(9);
      std::vector<int32_t> px(B * c.subpixels());
      for (auto& x : px) x = int32_t(gen() % 256);
      const SequenceBatch images = model.batch(px, B);
      ReplicaSet replicas(model.core(), B);  // as lt-train: the batch split over ranks and CPU threads

      std::vector<double> step_s;
      for (int r = 0; r < o.repetitions + 1; ++r) {  // the first step plans buffers
        synchronize(dev);
        auto t0 = Clock::now();
        options.seed = trainer.dropout_seed();
        replicas.forward_backward(images, options);
        trainer.update();
        synchronize(dev);
        if (r > 0) step_s.push_back(seconds_since(t0));
        if (o.verbose && report) std::cerr << "train " << shape << " step " << r << ": " << seconds_since(t0) << " s\n";
      }
      const double sum_s = gradient_sum_seconds(model.core().params().grads(), o.repetitions);
      Stats s = Stats::of(step_s);
      const double gemm = sgemm_gflops(c, B, dev, o.repetitions, options.precision.products);
      const double dense = dense_flops(c, B) / s.mean / 1e9;
      Row row = environment_row(dname, num_threads());
      row.set("shape", shape).set("attention", attention_name(c.transformer));
      row.set("layers", c.transformer.layers).set("d_model", c.transformer.d_model).set("batch", B);
      row.set("ranks", world.size()).set("replicas", replicas.replicas());
      row.set("micro_batch", replicas.micro_batch());  // 0: whole; else the passes a batch that ran out of memory took
      row.set("precision", products_name(options.precision.products));
      row.set("ms_per_step", s.mean * 1e3).set("ms_per_step_std", s.stddev * 1e3);
      row.set("examples_per_s", double(B) / s.mean);
      row.set("dense_gflops", dense).set("sgemm_gflops", gemm).set("dense_fraction", dense / gemm);
      row.set("gradient_mb", double(model.core().params().numel()) * 4 / 1e6).set("gradient_sum_ms", sum_s * 1e3);
      row.set("repetitions", o.repetitions);
      if (!report) continue;
      out.add(row);
      if (o.verbose)
        std::cerr << "train " << shape << ": " << double(B) / s.mean << " examples/s, dense "
                  << dense << " GFLOP/s = " << 100 * dense / gemm << "% of sgemm " << gemm << " GFLOP/s\n";
    }
  }
}

}  // namespace lt::bench
