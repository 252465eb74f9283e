// Reference compatibility: a state_dict of the reference's ImageGenerator
// (idiap/linear-transformer-experiments, image-generation/main.py) saved with
// safetensors.torch.save_file and only the `heads` and `attention` metadata of
// docs/checkpoint-format.md loads in lt and evaluates to the bits/dim of an
// independent float64 forward pass written from the reference's modules.
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "io/image_dataset.h"
#include "io/temp_dir.h"
#include "model/image_model.h"
#include "model/reference_model.h"
#include "test_util.h"
#include "train/image_training.h"

using namespace lt;
using namespace lt::test;

namespace {

// A safetensors file as safetensors.torch.save_file writes one: F32 tensors,
// the JSON header padded with spaces to 8 bytes, written here by hand so the
// test depends on nothing of lt's writer.
void write_like_safetensors_torch(const std::string& path,
                                  const std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  nlohmann::json header;
  header["__metadata__"] = metadata;
  std::vector<uint8_t> data;
  for (const auto& [name, t] : tensors) {
    const size_t begin = data.size(), bytes = t.second.size() * sizeof(float);
    data.resize(begin + bytes);
    std::memcpy(data.data() + begin, t.second.data(), bytes);
    header[name] = {{"dtype", "F32"}, {"shape", t.first}, {"data_offsets", {begin, begin + bytes}}};
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::vector<uint8_t> file(8);
  for (int i = 0; i < 8; ++i) file[i] = uint8_t(uint64_t(h.size()) >> (8 * i));
  file.insert(file.end(), h.begin(), h.end());
  file.insert(file.end(), data.begin(), data.end());
  write_bytes(path, file);
}

// The reference's PositionalEncoding(D, max_len) buffer in float32 as torch
// computes it: div_term = exp(arange(0, D, 2) * (-ln 10000 / D)), then
// sin / cos of position * div_term, all float32. Shape [1, max_len, D].
std::vector<float> torch_position_buffer(int64_t max_len, int64_t D) {
  std::vector<float> pe(max_len * D);
  const float scale = float(-std::log(10000.0) / double(D));
  for (int64_t i = 0; i < D / 2; ++i) {
    const float div = std::exp(float(2 * i) * scale);
    for (int64_t p = 0; p < max_len; ++p) {
      const float angle = float(p) * div;
      pe[p * D + 2 * i] = std::sin(angle);
      pe[p * D + 2 * i + 1] = std::cos(angle);
    }
  }
  return pe;
}

// The reference's discretized_mix_logistic_loss for one position, in double:
// the target byte scaled to [-1, 1], log-scales clamped at -7, bin half-width
// 1/255, the edge bins open-ended and the density fallback for bins of mass
// <= 1e-5.
double reference_mol_nll(const double* p, int64_t K, int byte) {
  const double y = double(byte) / 255.0 * 2 - 1;
  auto softplus = [](double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); };
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  double top = -1e300;
  for (int64_t k = 0; k < K; ++k) top = std::max(top, p[k]);
  double norm = 0;
  for (int64_t k = 0; k < K; ++k) norm += std::exp(p[k] - top);
  const double log_norm = top + std::log(norm);
  std::vector<double> lp(K);
  double lp_top = -1e300;
  for (int64_t k = 0; k < K; ++k) {
    const double mean = p[K + k], log_scale = std::max(p[2 * K + k], -7.0);
    const double centered = y - mean, inv = std::exp(-log_scale);
    const double plus_in = inv * (centered + 1.0 / 255), min_in = inv * (centered - 1.0 / 255);
    const double cdf_delta = sigmoid(plus_in) - sigmoid(min_in);
    const double mid_in = inv * centered;
    double v;
    if (y < -0.999)
      v = plus_in - softplus(plus_in);
    else if (y > 0.999)
      v = -softplus(min_in);
    else if (cdf_delta > 1e-5)
      v = std::log(std::max(cdf_delta, 1e-12));
    else
      v = mid_in - log_scale - 2 * softplus(mid_in) - std::log(127.5);
    lp[k] = v + p[k] - log_norm;
    lp_top = std::max(lp_top, lp[k]);
  }
  double s = 0;
  for (double v : lp) s += std::exp(v - lp_top);
  return -(lp_top + std::log(s));
}

}  // namespace

TEST_CASE("a reference ImageGenerator state_dict evaluates to the bits/dim of a float64 reference forward pass") {
  // The reference sizes MNIST's model by the data: 28x28 grey, so the
  // sequence (and pos_embedding.pe) is 783 long. A tiny width keeps the
  // float64 O(L^2) attention fast.
  for (const std::string attention : {"causal-linear", "full"}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << attention);
    Rng rng(seed);
    const int64_t layers = 2, heads = 2, d = 8, ff = 4 * d, K = 10, S = 784, L = S - 1;
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> sd;
    auto uniform = [&](std::vector<int64_t> shape, double bound) {
      int64_t n = 1;
      for (int64_t s : shape) n *= s;
      std::vector<float> v(n);
      for (auto& x : v) x = float(rng.uniform(-bound, bound));
      return std::make_pair(shape, v);
    };
    auto linear = [&](const std::string& name, int64_t out, int64_t in) {
      sd[name + ".weight"] = uniform({out, in}, 1 / std::sqrt(double(in)));
      sd[name + ".bias"] = uniform({out}, 1 / std::sqrt(double(in)));
    };
    auto norm = [&](const std::string& name) {
      auto g = uniform({d}, 0.2);
      for (auto& x : g.second) x += 1;
      sd[name + ".weight"] = g;
      sd[name + ".bias"] = uniform({d}, 0.2);
    };
    for (int64_t l = 0; l < layers; ++l) {
      const std::string p = "transformer.layers." + std::to_string(l) + ".";
      for (const char* proj : {"query", "key", "value", "out"}) linear(p + "attention." + proj + "_projection", d, d);
      linear(p + "linear1", ff, d);
      linear(p + "linear2", d, ff);
      norm(p + "norm1");
      norm(p + "norm2");
    }
    norm("transformer.norm");
    sd["value_embedding.weight"] = {{256, d / 2}, rng.normals(256 * d / 2)};
    linear("predictor", 3 * K, d);
    sd["pos_embedding.pe"] = {{1, L, d / 2}, torch_position_buffer(L, d / 2)};

    TempDir dir;
    const std::string path = dir.file("reference.safetensors");
    write_like_safetensors_torch(path, sd, {{"heads", std::to_string(heads)}, {"attention", attention}});

    auto model = ImageModel::load(path, Device::cpu);
    const ImageModelConfig& c = model->config();
    CHECK(c.height == 28);
    CHECK(c.width == 28);
    CHECK(c.channels == 1);
    CHECK(c.mixtures == K);
    CHECK(c.head == HeadKind::mixture_of_logistics);
    CHECK(c.transformer.layers == layers);
    CHECK(c.transformer.heads == heads);
    CHECK(c.transformer.d_model == d);
    CHECK(c.transformer.ff_dim == ff);
    CHECK(c.transformer.attention == (attention == "full" ? AttentionKind::softmax : AttentionKind::linear));

    // Two random digits, the edge bytes 0 and 255 among them.
    ImageSet set;
    set.count = 2, set.height = 28, set.width = 28, set.channels = 1;
    set.pixels = random_bytes(rng, 2 * S);
    set.pixels[5] = 0, set.pixels[6] = 255, set.pixels[S + 100] = 0, set.pixels[S - 1] = 255;
    set.source = "memory";
    const ImageEvaluation ev = evaluate_images(*model, set, 2);

    RefWeights W(load_safetensors(path).tensors);
    const std::vector<double>& pe = W.at("pos_embedding.pe");
    double total = 0;
    for (int64_t i = 0; i < set.count; ++i) {
      std::vector<int32_t> tokens(set.pixels.begin() + i * S, set.pixels.begin() + i * S + L);  // x[:-1]
      std::vector<double> head = ref_sequence_model(W, layers, heads, attention == "full", tokens, pe);
      for (int64_t t = 0; t < L; ++t) total += reference_mol_nll(&head[t * 3 * K], K, set.pixels[i * S + t + 1]);
    }
    const double ref_nats = total / double(set.count * L), ref_bpd = ref_nats / std::log(2.0);
    INFO("lt " << ev.bits_per_dim << " bits/dim, float64 reference " << ref_bpd);
    CHECK(ev.images == 2);
    CHECK(std::abs(ev.bits_per_dim - ref_bpd) < 1e-6 * ref_bpd);  // measured: below 1e-9
  }
}

TEST_CASE("a reference checkpoint of an image size the sequence cannot tell needs the image metadata") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // A 4x4 model as a 4x4x1 lt model would save it, then stripped to the
  // reference's metadata: 15 positions could be 1x16, 4x4, 16x1, ...
  ImageModelConfig c;
  c.height = c.width = 4;
  c.mixtures = 2;
  c.transformer = TransformerConfig{1, 2, 4, 8, 32, AttentionKind::linear, Direction::causal, "elu", 0.1f};
  ImageModel lt_model(c, Device::cpu);
  lt_model.core().init_parameters(seed);
  std::map<std::string, Tensor> tensors = lt_model.core().params().named_values();
  tensors["pos_embedding.pe"] = Tensor::from_vector(torch_position_buffer(15, 4), {1, 15, 4});
  const std::string bare = dir.file("bare.safetensors");
  save_safetensors(bare, tensors, {{"heads", "2"}, {"attention", "causal-linear"}});
  std::string err = error_of([&] { ImageModel::load(bare, Device::cpu); });
  CHECK(err.find(bare) != std::string::npos);
  CHECK(err.find("16 subpixels") != std::string::npos);
  CHECK(err.find("image_height") != std::string::npos);

  // With the size in the metadata (docs/checkpoint-format.md) it loads and
  // evaluates as the lt model it came from.
  const std::string sized = dir.file("sized.safetensors");
  save_safetensors(sized, tensors,
                   {{"heads", "2"}, {"attention", "causal-linear"}, {"image_height", "4"}, {"image_width", "4"},
                    {"image_channels", "1"}});
  auto loaded = ImageModel::load(sized, Device::cpu);
  std::vector<int32_t> px(2 * 16);
  for (auto& p : px) p = int32_t(rng.integer(0, 255));
  Tensor images = Tensor::from_vector(px, {2, 16});
  CHECK(loaded->core().forward(loaded->batch(images), pass(false, 0)) ==
        lt_model.core().forward(lt_model.batch(images), pass(false, 0)));
}
