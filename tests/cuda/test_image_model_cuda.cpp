// The whole image model on the GPU against the CPU: the training loss and
// every gradient (dropout on), optimizer steps through the Trainer, and the
// recurrent form (prefill, step, fork, sample) used by generation.
#include <algorithm>
#include <cmath>

#include "backend/cuda_graph.h"
#include "model/image_generation.h"
#include "model/image_model.h"
#include "test_util.h"
#include "train/trainer.h"

using namespace lt;
using namespace lt::test;

namespace {
constexpr Device kGpu = Device::cuda;

// Head dims that are not multiples of 32 and a length past one causal chunk.
ImageModelConfig small_config(Rng& rng, AttentionKind attention, HeadKind head) {
  ImageModelConfig c;
  c.height = rng.integer(5, 9);
  c.width = rng.integer(5, 9);
  c.channels = rng.integer(0, 1) ? 3 : 1;
  c.mixtures = rng.integer(1, 10);
  c.head = head;
  c.transformer.layers = 2;
  c.transformer.heads = rng.integer(1, 3);
  c.transformer.head_dim = 4 * rng.integer(2, 10);  // d/2 codes need d % 4 == 0
  c.transformer.d_model = c.transformer.heads * c.transformer.head_dim;
  c.transformer.ff_dim = 4 * c.transformer.d_model;
  c.transformer.attention = attention;
  c.transformer.dropout = 0.1f;
  return c;
}

Tensor random_images(Rng& rng, int64_t B, int64_t S) {
  std::vector<int32_t> v(B * S);
  for (auto& x : v) x = int32_t(rng.integer(0, 255));
  v[0] = 0;
  v[S - 1] = 255;
  return Tensor::from_vector(v, {B, S});
}

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

struct Pair {
  ImageModel cpu, gpu;
  Pair(const ImageModelConfig& c, uint64_t seed) : cpu(c, Device::cpu), gpu(c, kGpu) {
    cpu.core().init_parameters(seed);
    Tensor values = gpu.core().params().values();  // a view: copying into it sets the GPU parameters
    values.copy_from(cpu.core().params().values());
  }
};
}  // namespace

TEST_CASE("cuda image model loss and gradients match the CPU (both attentions, both heads, dropout on)") {
  if (!cuda_or_skip()) return;
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    for (HeadKind head : {HeadKind::mixture_of_logistics, HeadKind::categorical}) {
      uint64_t seed = fresh_seed();
      INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
      Rng rng(seed);
      ImageModelConfig c = small_config(rng, kind, head);
      Pair m(c, seed);
      const int64_t B = rng.integer(1, 4), L = c.sequence_length();
      Tensor images = random_images(rng, B, c.subpixels());
      Tensor nll_cpu = Tensor::empty({B * L}), nll_gpu = Tensor::empty({B * L}, kGpu);
      ForwardPass fc, fg;
      double loss_cpu = m.cpu.core().forward(m.cpu.batch(images), pass(true, 91), fc, &nll_cpu);
      double loss_gpu = m.gpu.core().forward(m.gpu.batch(images), pass(true, 91), fg, &nll_gpu);
      CHECK(std::abs(loss_gpu - loss_cpu) < 1e-4 * std::abs(loss_cpu));
      CHECK(rel_error(nll_gpu, nll_cpu) < 1e-4);
      m.cpu.core().params().zero_grad();
      m.gpu.core().params().zero_grad();
      m.cpu.core().backward(fc);
      m.gpu.core().backward(fg);
      // Errors relative to each gradient, floored at a small part of the whole
      // gradient: softmax is blind to the key bias, whose gradient is rounding noise.
      const double floor = 1e-3 * norm(m.cpu.core().params().grads().to_vector());
      for (size_t p = 0; p < m.cpu.core().params().size(); ++p) {
        INFO("parameter " << m.cpu.core().params().name(p));
        std::vector<float> g = m.gpu.core().params().grad(p).to_vector(), want = m.cpu.core().params().grad(p).to_vector();
        std::vector<float> diff(g.size());
        for (size_t i = 0; i < g.size(); ++i) diff[i] = g[i] - want[i];
        CHECK(norm(diff) < 1e-3 * std::max(norm(want), floor));
      }
    }
  }
}

TEST_CASE("cuda training steps follow the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModelConfig c = small_config(rng, AttentionKind::linear, HeadKind::mixture_of_logistics);
  Pair m(c, seed);
  TrainOptions options;
  options.schedule.lr = 1e-3f;
  Trainer tc(m.cpu.core().params(), options), tg(m.gpu.core().params(), options);
  ForwardPass fc, fg;
  for (int s = 0; s < 5; ++s) {
    Tensor images = random_images(rng, 2, c.subpixels());
    m.cpu.core().forward(m.cpu.batch(images), pass(true, tc.dropout_seed()), fc);
    m.gpu.core().forward(m.gpu.batch(images), pass(true, tg.dropout_seed()), fg);
    m.cpu.core().backward(fc);
    m.gpu.core().backward(fg);
    tc.update();
    tg.update();
  }
  CHECK(rel_error(m.gpu.core().params().values(), m.cpu.core().params().values()) < 1e-4);
}

TEST_CASE("cuda recurrent steps, prefill and forks match the CPU") {
  if (!cuda_or_skip()) return;
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
    Rng rng(seed);
    ImageModelConfig c = small_config(rng, kind, HeadKind::mixture_of_logistics);
    // Linear attention with a causal feed-forward convolution, whose window is state too.
    if (kind == AttentionKind::linear) c.transformer.ff_conv = 4;
    Pair m(c, seed);
    const int64_t B = 3, S = c.subpixels(), T = rng.integer(1, c.sequence_length() - 2);
    std::vector<int32_t> px = random_images(rng, B, S).to_vector_i32();
    std::vector<int32_t> prefix;
    for (int64_t b = 0; b < B; ++b) prefix.insert(prefix.end(), px.begin() + b * S, px.begin() + b * S + T);
    Tensor tokens = Tensor::from_vector(prefix, {B, T});

    RecurrentState sc = m.cpu.core().new_state(B), sg = m.gpu.core().new_state(B);
    Tensor hc = Tensor::empty({B, c.head_width()}), hg = Tensor::empty({B, c.head_width()}, kGpu);
    m.cpu.core().prefill(tokens, sc, hc);
    m.gpu.core().prefill(tokens.to(kGpu), sg, hg);
    CHECK(rel_error(hg, hc) < 1e-4);
    CHECK(rel_error(sg.buffer, sc.buffer) < 1e-4);

    // Fork element 1 into a fresh batch of 2 at slot 0 and step on both devices.
    RecurrentState fc = m.cpu.core().new_state(2), fg = m.gpu.core().new_state(2);
    m.cpu.core().copy_state_element(sc, 1, fc, 0);
    m.gpu.core().copy_state_element(sg, 1, fg, 0);
    Tensor hc2 = Tensor::empty({2, c.head_width()}), hg2 = Tensor::empty({2, c.head_width()}, kGpu);
    for (int64_t t = T; t < c.sequence_length(); ++t) {
      std::vector<int32_t> tok{px[S + t], int32_t(rng.integer(0, 255))};
      Tensor tt = Tensor::from_vector(tok, {2});
      m.cpu.core().step(fc, tt, hc2);
      m.gpu.core().step(fg, tt.to(kGpu), hg2);
    }
    CHECK(rel_error(hg2, hc2) < 1e-4);
  }
}

// Recorded steps (CUDA graphs) replay the launches they recorded: every
// head equals the launched step's bits, through state switches (each state
// is a key of its own), a batch size change and a bf16 state.
TEST_CASE("cuda recurrent steps replayed from a CUDA graph give the launched steps' bits") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModelConfig c = small_config(rng, AttentionKind::linear, HeadKind::mixture_of_logistics);
  c.transformer.ff_conv = rng.integer(0, 1) ? 3 : 0;
  ImageModel gpu(c, kGpu);
  gpu.core().init_parameters(seed);
  const int64_t L = c.sequence_length();
  std::vector<int32_t> tokens(static_cast<size_t>(3 * L));
  for (auto& v : tokens) v = int32_t(rng.integer(0, 255));
  // Steps a, b (a batch of B each) in turn, then a alone, then a batch of 1; returns every head.
  auto run = [&](bool graphs, DType dtype) {
    set_cuda_graphs(graphs);
    gpu.core().prepare_step(Precision{Products::fp32, dtype});
    std::vector<float> heads;
    auto step = [&](RecurrentState& st, int64_t B, int64_t t) {
      std::vector<int32_t> col(tokens.begin() + t * B, tokens.begin() + (t + 1) * B);
      Tensor h = Tensor::empty({B, c.head_width()}, kGpu);
      gpu.core().step(st, Tensor::from_vector(col, {B}).to(kGpu), h);  // at st's position, t
      const std::vector<float> v = h.to_vector();
      heads.insert(heads.end(), v.begin(), v.end());
    };
    RecurrentState a = gpu.core().new_state(2, dtype), b = gpu.core().new_state(2, dtype), one = gpu.core().new_state(1, dtype);
    for (int64_t t = 0; t < 4; ++t) step(a, 2, t), step(b, 2, t);
    for (int64_t t = 4; t < L; ++t) step(a, 2, t);
    for (int64_t t = 0; t < L; ++t) step(one, 1, t);
    set_cuda_graphs(true);
    return heads;
  };
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO("state " << dtype_name(dtype));
    const uint64_t before = CudaGraph::replays();
    const std::vector<float> launched = run(false, dtype);
    CHECK(CudaGraph::replays() == before);
    const std::vector<float> replayed = run(true, dtype);
    // a from its sixth step (b took turns before), the batch of 1 from its second.
    CHECK(CudaGraph::replays() - before == uint64_t((L - 5) + (L - 1)));
    CHECK(replayed == launched);
  }
}

// Generates B images on the GPU and compares each one's summed step
// log-likelihood with the GPU's parallel pass over the same image.
static void check_generation_against_parallel(ImageModel& gpu, uint64_t seed, int64_t B, double tolerance,
                                             const Precision& precision = {}) {
  const ImageModelConfig& c = gpu.config();
  ImageGenerator gen(gpu, B, precision);
  std::vector<uint8_t> pixels;
  std::vector<double> nll;
  gen.generate(seed, pixels, nullptr, nullptr, &nll);
  std::vector<int32_t> px(pixels.begin(), pixels.end());
  Tensor per = Tensor::empty({B * c.sequence_length()}, kGpu);
  gpu.core().forward(gpu.batch(Tensor::from_vector(px, {B, c.subpixels()})), pass(false, 0), &per);
  std::vector<float> pv = per.to_vector();
  for (int64_t b = 0; b < B; ++b) {
    double sum = 0, sampled = 0;
    for (int64_t t = 0; t < c.sequence_length(); ++t) {
      sum += pv[b * c.sequence_length() + t];
      sampled += nll[b * c.sequence_length() + t];
    }
    CHECK(std::abs(sampled - sum) < tolerance * std::abs(sum));
  }
}

TEST_CASE("cuda generation log-likelihoods equal the GPU's parallel pass") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModel gpu(small_config(rng, AttentionKind::linear, HeadKind::mixture_of_logistics), kGpu);
  gpu.core().init_parameters(seed);
  check_generation_against_parallel(gpu, seed, 4, 1e-4);
}

TEST_CASE("cuda bf16 state: half the bytes of S, and generation log-likelihoods within a percent of the parallel pass") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModelConfig c = small_config(rng, AttentionKind::linear, HeadKind::mixture_of_logistics);
  ImageModel gpu(c, kGpu);
  gpu.core().init_parameters(seed);
  const int64_t B = 4, fp32_state = gpu.core().state_numel(B, DType::f32);
  const int64_t H = c.transformer.heads, E = c.transformer.head_dim, layers = c.transformer.layers;
  CHECK(fp32_state - gpu.core().state_numel(B, DType::bf16) == layers * (B * H * E * E - (B * H * E * E + 1) / 2));
  check_generation_against_parallel(gpu, seed, B, 1e-2, Precision{Products::fp32, DType::bf16});
}

TEST_CASE("cuda bf16 state: prefill, a fork and steps stay within bf16 rounding of the fp32 state's") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModelConfig c = small_config(rng, AttentionKind::linear, HeadKind::mixture_of_logistics);
  ImageModel fp32(c, kGpu), bf16(c, kGpu);
  fp32.core().init_parameters(seed);
  bf16.core().init_parameters(seed);
  bf16.core().prepare_step(Precision{Products::fp32, DType::bf16});
  const int64_t B = 3, S = c.subpixels(), T = rng.integer(1, c.sequence_length() - 2);
  std::vector<int32_t> px = random_images(rng, B, S).to_vector_i32();
  std::vector<int32_t> prefix;
  for (int64_t b = 0; b < B; ++b) prefix.insert(prefix.end(), px.begin() + b * S, px.begin() + b * S + T);
  Tensor tokens = Tensor::from_vector(prefix, {B, T}).to(kGpu);
  RecurrentState s32 = fp32.core().new_state(B), s16 = bf16.core().new_state(B, DType::bf16);
  Tensor h32 = Tensor::empty({B, c.head_width()}, kGpu), h16 = Tensor::empty({B, c.head_width()}, kGpu);
  fp32.core().prefill(tokens, s32, h32);
  bf16.core().prefill(tokens, s16, h16);
  CHECK(rel_error(h16, h32) < 1e-4);  // the head after the prefix comes from the parallel pass
  // Fork element 1 into slot 0 of a batch of 2 and step both to the end.
  RecurrentState f32 = fp32.core().new_state(2), f16 = bf16.core().new_state(2, DType::bf16);
  fp32.core().copy_state_element(s32, 1, f32, 0);
  bf16.core().copy_state_element(s16, 1, f16, 0);
  Tensor g32 = Tensor::empty({2, c.head_width()}, kGpu), g16 = Tensor::empty({2, c.head_width()}, kGpu);
  for (int64_t t = T; t < c.sequence_length(); ++t) {
    std::vector<int32_t> tok{px[S + t], int32_t(rng.integer(0, 255))};
    Tensor tt = Tensor::from_vector(tok, {2}).to(kGpu);
    fp32.core().step(f32, tt, g32);
    bf16.core().step(f16, tt, g16);
  }
  // Slot 0 continues element 1's prefix: only the state's rounding separates them.
  const std::vector<float> a = g32.to_vector(), b = g16.to_vector();
  const int64_t W = c.head_width();
  std::vector<float> a0(a.begin(), a.begin() + W), b0(b.begin(), b.begin() + W);
  CHECK(rel_error(b0, std::vector<double>(a0.begin(), a0.end())) < 2e-2);
}
