// What the benchmarks run on: random inputs, and the image-model shapes (the
// paper's presets with optional overrides of depth, width and heads).
#include <random>

#include "benchmarks.h"
#include "common/error.h"

namespace lt::bench {

Tensor random_tensor(const Shape& s, Device d, std::mt19937& gen) {
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(shape_numel(s));
  for (auto& x : v) x = dist(gen);
  return Tensor::from_vector(v, s, d);
}

std::string image_attention(const std::string& name) {
  if (name == "linear" || name == "causal-linear") return "causal-linear";
  if (name == "softmax" || name.rfind("lsh-", 0) == 0) {
    TransformerConfig t;
    t.set_attention(name);  // refuses rounds outside 1..64
    return name;
  }
  throw Error("unknown attention '" + name + "' (expected linear, softmax or lsh-N, N hashing rounds)");
}

ImageModelConfig bench_model_config(const std::string& shape, const std::string& attention, int64_t layers,
                                    int64_t d_model, int64_t heads) {
  check(shape == "mnist" || shape == "cifar", "unknown shape '" + shape + "' (expected mnist or cifar)");
  ImageModelConfig c = ImageModelConfig::preset(shape == "cifar" ? "cifar10" : shape);
  if (layers > 0) c.transformer.layers = layers;
  if (heads > 0) c.transformer.heads = heads;
  if (d_model > 0) c.transformer.d_model = d_model;
  if (heads > 0 || d_model > 0) {
    check(c.transformer.d_model % c.transformer.heads == 0,
          "--d-model " + std::to_string(c.transformer.d_model) + " is not a multiple of --heads " +
              std::to_string(c.transformer.heads));
    c.transformer.head_dim = c.transformer.d_model / c.transformer.heads;
    c.transformer.ff_dim = 4 * c.transformer.d_model;
  }
  c.transformer.set_attention(attention);
  c.validate();
  return c;
}

}  // namespace lt::bench
