// A state pool on the GPU: the row-mapped attention step and convolution
// against the CPU's, rows of a pool stepped together (padded to batch-size
// buckets, replayed from graphs) against each sequence alone on the CPU, an image batch's requests against each drawn alone, and
// streams of one group of the shipped speech model against the same audio
// on the CPU.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "api/c_api_util.h"
#include "attention/attention.h"
#include "attention/feature_map.h"
#include "backend/bf16.h"
#include "backend/cuda_graph.h"
#include "backend/device.h"
#include "lt.h"
#include "model/pooled_sequences.h"
#include "model/state_pool.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

constexpr Device kGpu = Device::cuda;

// A float tensor as bf16 bits, and back.
Tensor to_bf16(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), Device::cpu, DType::bf16);
  const Tensor c = t.to(Device::cpu);
  for (int64_t i = 0; i < t.numel(); ++i) out.data_bf16()[i] = float_to_bf16(c.data()[i]);
  return out;
}
Tensor to_f32(const Tensor& t) {
  if (t.dtype() == DType::f32) return t.to(Device::cpu);
  const Tensor c = t.to(Device::cpu);
  Tensor out = Tensor::empty(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.data()[i] = bf16_to_float(c.data_bf16()[i]);
  return out;
}

// rows as the GPU ops read them: int64 indices in device memory.
Tensor device_rows(std::vector<int64_t>& rows) {
  const int64_t n = int64_t(rows.size());
  return Tensor::wrap(rows.data(), {2 * n}, Device::cpu, DType::i32).to(kGpu);
}

const int64_t* row_pointer(const Tensor& t) { return static_cast<const int64_t*>(t.raw()); }

// N distinct rows of R, in random order.
std::vector<int64_t> some_rows(Rng& rng, int64_t N, int64_t R) {
  std::vector<int64_t> all(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) all[size_t(r)] = r;
  std::shuffle(all.begin(), all.end(), rng.gen);
  all.resize(size_t(N));
  return all;
}

std::vector<std::string> phones_of(lt_transcript* t) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < lt_transcript_phones(t); ++i) out.emplace_back(lt_transcript_phone(t, i).text);
  return out;
}

}  // namespace

TEST_CASE("cuda steps over a pool's rows: attention and convolution match the CPU's, other rows untouched") {
  if (!cuda_or_skip()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t R = rng.integer(3, 40), N = rng.integer(1, R), H = rng.integer(1, 4);
  const int64_t E = std::vector<int64_t>{8, 16, 32, 24}[size_t(rng.integer(0, 3))];
  INFO("R " << R << " N " << N << " H " << H << " E " << E);
  std::vector<int64_t> rows = some_rows(rng, N, R);
  const Tensor map = device_rows(rows);
  auto phi = make_feature_map("elu", FeatureMapOptions{E, 0, seed, Device::cpu});
  auto gphi = make_feature_map("elu", FeatureMapOptions{E, 0, seed, kGpu});
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO("S " << dtype_name(dtype));
    Tensor qkv = rng.randn({N, 3, H, E}), S0 = rng.randn({R, H, E, E});
    std::vector<float> z(size_t(R * H * E));
    for (float& v : z) v = float(rng.uniform(1, 3));  // a normaliser of positive features
    Tensor S = dtype == DType::f32 ? S0.clone() : to_bf16(S0), Z = Tensor::from_vector(z, {R, H, E});
    Tensor gS = S.to(kGpu), gZ = Z.to(kGpu);
    Tensor out = Tensor::empty({N, H, E}), gout = Tensor::empty({N, H, E}, kGpu);
    linear_attention_step_packed(qkv, *phi, S, Z, out, rows.data());
    linear_attention_step_packed(qkv.to(kGpu), *gphi, gS, gZ, gout, row_pointer(map));
    CHECK(rel_error(gout.to(Device::cpu), out) < 1e-4);
    CHECK(rel_error(gZ.to(Device::cpu), Z) < 1e-5);
    // Every row, stepped or not: the CPU's own rows are checked against alone in test_state_pool.cpp.
    CHECK(rel_error(to_f32(gS), to_f32(S)) < (dtype == DType::f32 ? 1e-5 : 1e-2));
  }
  // The convolution window, continued one position for the mapped rows.
  const int64_t K = rng.integer(2, 6), C = rng.integer(1, 300);
  Tensor x = rng.randn({N, 1, C}), w = rng.randn({C, K}), bias = rng.randn({C}), window = rng.randn({R, K - 1, C});
  Tensor gwindow = window.to(kGpu), y = Tensor::empty({N, 1, C}), gy = Tensor::empty({N, 1, C}, kGpu);
  depthwise_conv_continue(x, w, bias, window, y, rows.data());
  depthwise_conv_continue(x.to(kGpu), w.to(kGpu), bias.to(kGpu), gwindow, gy, row_pointer(map));
  CHECK(rel_error(gy.to(Device::cpu), y) < 1e-5);
  CHECK(rel_error(gwindow.to(Device::cpu), window) < 1e-6);
}

TEST_CASE("cuda state pool: rows at their own positions follow each sequence stepped alone on the CPU") {
  if (!cuda_or_skip()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  int64_t conv = 0;
  SUBCASE("plain feed-forward") {}
  SUBCASE("with a feed-forward convolution") { conv = 3; }
  auto cpu = pooled_token_model(Device::cpu, conv), gpu = pooled_token_model(kGpu, conv);
  cpu->init_parameters(seed);
  Tensor values = gpu->params().values();  // a view: copying into it sets the GPU parameters
  values.copy_from(cpu->params().values());
  std::vector<PooledSequence> seqs = random_sequences(rng, 24);
  StatePool pool(*gpu, Precision{}, 2);  // grows on the GPU while the test runs
  const uint64_t replays = CudaGraph::replays();
  // CPU tokens and heads, as the speech group and the image batch pass them.
  CHECK(step_in_pool(pool, seqs, rng) > 0);
  CHECK(pool.live() == 0);
  // Steps padded to a handful of batch sizes replay their recorded graphs.
  if (cuda_graphs()) CHECK(CudaGraph::replays() > replays);
  cpu->prepare_step(Precision{});
  for (const PooledSequence& s : seqs) {
    const std::vector<float> alone = heads_alone(*cpu, s, DType::f32);
    REQUIRE(alone.size() == s.heads.size());
    CHECK(rel_error(s.heads, std::vector<double>(alone.begin(), alone.end())) < 1e-4);
  }
}

TEST_CASE("lt.h on cuda: streams of one group give the CPU's phones for the same recordings") {
  if (!cuda_or_skip()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::string model = std::string(LT_WEIGHTS_DIR) + "/asr-stream.safetensors";
  lt_recognizer_options o;
  lt_recognizer_tool_options(0, &o);  // lt-asr's decoding: beam 64 and the phone model
  lt_recognizer *cpu = nullptr, *gpu = nullptr;
  REQUIRE_MESSAGE(lt_recognizer_new(model.c_str(), &o, &cpu) == LT_OK, std::string(lt_last_error()));
  o.device = "cuda";
  REQUIRE_MESSAGE(lt_recognizer_new(model.c_str(), &o, &gpu) == LT_OK, std::string(lt_last_error()));
  // Four streams of voiced bursts with their own pitch, pushed in pieces of random sizes.
  const int64_t n = 4;
  std::vector<std::vector<float>> audio(n);
  for (auto& a : audio) {
    a.resize(size_t(rng.integer(16000, 48000)));
    const double f0 = rng.uniform(90, 200);
    double phase = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double t = double(i) / 16000;
      phase += 2 * M_PI * f0 / 16000;
      double v = 0;
      for (int h = 1; h < 30; ++h) v += std::sin(h * phase) / h * (1 + std::sin(t * 5 + h));
      a[i] = float(0.05 * v * (0.5 + 0.5 * std::sin(2 * M_PI * 2 * t)) + 0.005 * rng.uniform());
    }
  }
  std::map<std::string, std::vector<std::vector<std::string>>> phones;
  for (auto [name, r] : {std::pair<const char*, lt_recognizer*>{"cpu", cpu}, {"cuda", gpu}}) {
    lt_stream_group* g = nullptr;
    REQUIRE_MESSAGE(lt_stream_group_new(r, &g) == LT_OK, std::string(lt_last_error()));
    std::vector<lt_stream*> streams(n, nullptr);
    for (auto& s : streams) REQUIRE(lt_stream_group_open(g, &s) == LT_OK);
    std::vector<size_t> at(n, 0);
    for (bool more = true; more;) {
      more = false;
      for (int64_t i = 0; i < n; ++i) {
        const size_t left = audio[size_t(i)].size() - at[size_t(i)];
        if (left == 0) continue;
        const size_t piece = std::min(left, size_t(rng.integer(160, 4000)));
        REQUIRE(lt_stream_push(streams[size_t(i)], audio[size_t(i)].data() + at[size_t(i)], int64_t(piece)) == LT_OK);
        at[size_t(i)] += piece;
        if (at[size_t(i)] == audio[size_t(i)].size()) REQUIRE(lt_stream_finish(streams[size_t(i)]) == LT_OK);
        more = true;
      }
      REQUIRE_MESSAGE(lt_stream_group_step(g, nullptr) == LT_OK, std::string(lt_last_error()));
    }
    for (lt_stream* s : streams) {
      CHECK(lt_stream_done(s) == 1);
      lt_transcript* t = nullptr;
      REQUIRE(lt_stream_take_settled(s, &t) == LT_OK);
      phones[name].push_back(phones_of(t));
      lt_transcript_free(t);
      lt_stream_free(s);
    }
    lt_stream_group_free(g);
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto& want = phones["cpu"][size_t(i)];
    const auto& got = phones["cuda"][size_t(i)];
    INFO("stream " << i << ": cpu " << want.size() << " phones, cuda " << got.size());
    // A search's choices near a tie may flip on float rounding; a few in a hundred at most.
    CHECK(edit_distance(got, want) <= std::max<int64_t>(1, int64_t(want.size()) / 20));
  }
  lt_recognizer_free(cpu);
  lt_recognizer_free(gpu);
}
