// A float64 re-implementation, written straight from the reference's modules,
// of the models' forward pass for one sequence: embedding beside a position
// code, fast-transformers' post-norm TransformerEncoder (causal linear
// attention as eq. 9 computed naively in O(L^2), or causal softmax attention,
// eq. 2), the final LayerNorm and the predictor. Tests compare lt's float32
// models with it; it shares no code with lib/.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lt::test {

// Tensors by name in double, as a state_dict.
struct RefWeights {
  std::map<std::string, std::vector<double>> w;
  explicit RefWeights(const std::map<std::string, Tensor>& tensors) {
    for (const auto& [name, t] : tensors) {
      std::vector<float> v = t.to_vector();
      w[name] = std::vector<double>(v.begin(), v.end());
    }
  }
  const std::vector<double>& at(const std::string& name) const {
    auto it = w.find(name);
    REQUIRE_MESSAGE(it != w.end(), "reference model: missing tensor " << name);
    return it->second;
  }
};

// y [n, out] = x [n, in] W^T + b, W [out, in] as torch.nn.Linear.
inline std::vector<double> ref_linear(const std::vector<double>& x, int64_t n, int64_t in, const std::vector<double>& W,
                                      const std::vector<double>& b) {
  const int64_t out = int64_t(b.size());
  REQUIRE(int64_t(W.size()) == out * in);
  std::vector<double> y(n * out);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b[o];
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * W[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

// torch.nn.LayerNorm over the last axis (biased variance, eps 1e-5).
inline void ref_layernorm(std::vector<double>& x, int64_t n, int64_t d, const std::vector<double>& g,
                          const std::vector<double>& b) {
  for (int64_t r = 0; r < n; ++r) {
    double* row = &x[r * d];
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += row[i];
    mean /= double(d);
    for (int64_t i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= double(d);
    const double rstd = 1 / std::sqrt(var + 1e-5);
    for (int64_t i = 0; i < d; ++i) row[i] = (row[i] - mean) * rstd * g[i] + b[i];
  }
}

// Causal attention of one sequence, heads of E = d / H columns each.
// Linear (eq. 9, phi = elu + 1, the reference's eps 1e-6 in the denominator):
//   out_i = sum_{j<=i} phi(q_i).phi(k_j) v_j / (sum_{j<=i} phi(q_i).phi(k_j) + eps)
// Softmax (eq. 2): out_i = sum_{j<=i} softmax_j(q_i.k_j / sqrt(E)) v_j.
inline std::vector<double> ref_causal_attention(const std::vector<double>& q, const std::vector<double>& k,
                                                const std::vector<double>& v, int64_t L, int64_t d, int64_t H,
                                                bool softmax) {
  const int64_t E = d / H;
  auto phi = [](double x) { return x > 0 ? x + 1 : std::exp(x); };
  std::vector<double> out(L * d, 0.0);
  std::vector<double> a(L);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double norm = 0, top = -1e300;
      for (int64_t j = 0; j <= i; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) {
          const double qe = q[i * d + h * E + e], ke = k[j * d + h * E + e];
          s += softmax ? qe * ke : phi(qe) * phi(ke);
        }
        a[j] = softmax ? s / std::sqrt(double(E)) : s;
        top = std::max(top, a[j]);
      }
      for (int64_t j = 0; j <= i; ++j) {
        if (softmax) a[j] = std::exp(a[j] - top);
        norm += a[j];
      }
      if (!softmax) norm += 1e-6;
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t e = 0; e < E; ++e) out[i * d + h * E + e] += a[j] / norm * v[j * d + h * E + e];
    }
  return out;
}

// fast-transformers' TransformerEncoder (post-norm layers, then "norm") on x [L, d].
inline std::vector<double> ref_transformer(const RefWeights& W, const std::string& prefix, int64_t layers, int64_t heads,
                                           bool softmax, std::vector<double> x, int64_t L, int64_t d) {
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = prefix + "layers." + std::to_string(l) + ".";
    auto lin = [&](const std::vector<double>& in, int64_t width, const std::string& name) {
      return ref_linear(in, L, width, W.at(p + name + ".weight"), W.at(p + name + ".bias"));
    };
    std::vector<double> q = lin(x, d, "attention.query_projection"), k = lin(x, d, "attention.key_projection"),
                        v = lin(x, d, "attention.value_projection");
    std::vector<double> att = lin(ref_causal_attention(q, k, v, L, d, heads, softmax), d, "attention.out_projection");
    for (int64_t i = 0; i < L * d; ++i) x[i] += att[i];
    ref_layernorm(x, L, d, W.at(p + "norm1.weight"), W.at(p + "norm1.bias"));
    const int64_t F = int64_t(W.at(p + "linear1.bias").size());
    std::vector<double> hidden = lin(x, d, "linear1");
    for (double& h : hidden) h = std::max(h, 0.0);
    std::vector<double> ff = lin(hidden, F, "linear2");
    for (int64_t i = 0; i < L * d; ++i) x[i] += ff[i];
    ref_layernorm(x, L, d, W.at(p + "norm2.weight"), W.at(p + "norm2.bias"));
  }
  ref_layernorm(x, L, d, W.at(prefix + "norm.weight"), W.at(prefix + "norm.bias"));
  return x;
}

// The reference's PositionalEncoding(d/2) rows in double: pe[p, 2i] = sin(p w_i),
// pe[p, 2i+1] = cos(p w_i), w_i = exp(2i (-ln 10000 / D)).
inline std::vector<double> ref_position_code(int64_t L, int64_t D) {
  std::vector<double> pe(L * D);
  for (int64_t p = 0; p < L; ++p)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double angle = double(p) * std::exp(double(2 * i) * (-std::log(10000.0) / double(D)));
      pe[p * D + 2 * i] = std::sin(angle);
      pe[p * D + 2 * i + 1] = std::cos(angle);
    }
  return pe;
}

// The whole model on one sequence of tokens [L]: value_embedding.weight rows
// beside pe rows [L, d/2], the transformer, then predictor -> [L, P].
inline std::vector<double> ref_sequence_model(const RefWeights& W, int64_t layers, int64_t heads, bool softmax,
                                              const std::vector<int32_t>& tokens, const std::vector<double>& pe) {
  const int64_t L = int64_t(tokens.size());
  const std::vector<double>& emb = W.at("value_embedding.weight");
  const int64_t half = int64_t(W.at("transformer.norm.weight").size()) / 2, d = 2 * half;
  REQUIRE(int64_t(pe.size()) >= L * half);
  std::vector<double> x(L * d);
  for (int64_t t = 0; t < L; ++t)
    for (int64_t i = 0; i < half; ++i) {
      x[t * d + i] = emb[int64_t(tokens[t]) * half + i];
      x[t * d + half + i] = pe[t * half + i];
    }
  std::vector<double> y = ref_transformer(W, "transformer.", layers, heads, softmax, x, L, d);
  return ref_linear(y, L, d, W.at("predictor.weight"), W.at("predictor.bias"));
}

}  // namespace lt::test
