// TransformerStack: parameters, training forward/backward. The recurrent step
// and prefill live in transformer_step.cpp.
#include <cmath>
#include <random>

#include "lt/attention.h"
#include "lt/ops.h"
#include "lt/transformer.h"
#include "model/transformer_internal.h"

namespace lt {

const char* attention_name(AttentionKind k) {
  return k == AttentionKind::softmax ? "softmax" : "causal-linear";
}

AttentionKind parse_attention(const std::string& s) {
  if (s == "causal-linear" || s == "linear") return AttentionKind::causal_linear;
  if (s == "softmax" || s == "full") return AttentionKind::softmax;
  throw Error("unknown attention '" + s + "' (expected causal-linear or softmax)");
}

void TransformerConfig::validate() const {
  check(layers >= 1 && heads >= 1 && head_dim >= 1 && ff_dim >= 1,
        "transformer sizes must be positive (layers " + std::to_string(layers) + ", heads " +
            std::to_string(heads) + ", head_dim " + std::to_string(head_dim) + ", ff " +
            std::to_string(ff_dim) + ")");
  check(d_model == heads * head_dim,
        "d_model " + std::to_string(d_model) + " must equal heads x head_dim = " + std::to_string(heads) +
            " x " + std::to_string(head_dim) + " = " + std::to_string(heads * head_dim));
  check(dropout >= 0.f && dropout < 1.f, "dropout must be in [0, 1), got " + std::to_string(dropout));
}

TransformerStack::TransformerStack(const TransformerConfig& config, Parameters& params,
                                   const std::string& prefix)
    : config_(config), params_(params), phi_(make_feature_map(config.feature_map)) {
  config_.validate();
  const int64_t d = config_.d_model, ff = config_.ff_dim;
  for (int64_t i = 0; i < config_.layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    LayerParams lp;
    auto linear = [&](const std::string& name, int64_t out, int64_t in, size_t& w, size_t& b) {
      w = params.add(p + name + ".weight", {out, in});
      b = params.add(p + name + ".bias", {out});
    };
    linear("attention.query_projection", d, d, lp.wq, lp.bq);
    linear("attention.key_projection", d, d, lp.wk, lp.bk);
    linear("attention.value_projection", d, d, lp.wv, lp.bv);
    linear("attention.out_projection", d, d, lp.wo, lp.bo);
    linear("linear1", ff, d, lp.w1, lp.b1);
    linear("linear2", d, ff, lp.w2, lp.b2);
    lp.g1 = params.add(p + "norm1.weight", {d});
    lp.be1 = params.add(p + "norm1.bias", {d});
    lp.g2 = params.add(p + "norm2.weight", {d});
    lp.be2 = params.add(p + "norm2.bias", {d});
    layers_.push_back(lp);
  }
  norm_g_ = params.add(prefix + "norm.weight", {d});
  norm_b_ = params.add(prefix + "norm.bias", {d});
}

void TransformerStack::set_dropout(float p) {
  check(p >= 0.f && p < 1.f, "dropout must be in [0, 1), got " + std::to_string(p));
  config_.dropout = p;
}

TransformerStack::~TransformerStack() = default;

void TransformerStack::init_parameters(uint64_t seed) const {
  std::mt19937_64 gen(seed);
  auto uniform_fill = [&](size_t idx, double bound) {
    Tensor t = params_.value(idx);
    std::vector<float> v(t.numel());
    std::uniform_real_distribution<double> u(-bound, bound);
    for (auto& x : v) x = float(u(gen));
    t.copy_from(Tensor::from_vector(v, t.shape()));
  };
  auto constant_fill = [&](size_t idx, float c) {
    Tensor t = params_.value(idx);
    t.copy_from(Tensor::from_vector(std::vector<float>(t.numel(), c), t.shape()));
  };
  for (const LayerParams& lp : layers_) {
    for (auto [w, b] : {std::pair{lp.wq, lp.bq}, {lp.wk, lp.bk}, {lp.wv, lp.bv}, {lp.wo, lp.bo},
                        {lp.w1, lp.b1}, {lp.w2, lp.b2}}) {
      double bound = 1.0 / std::sqrt(double(params_.shape(w)[1]));
      uniform_fill(w, bound);
      uniform_fill(b, bound);
    }
    for (size_t g : {lp.g1, lp.g2}) constant_fill(g, 1.f);
    for (size_t b : {lp.be1, lp.be2}) constant_fill(b, 0.f);
  }
  constant_fill(norm_g_, 1.f);
  constant_fill(norm_b_, 0.f);
}

void TransformerStack::plan(int64_t B, int64_t L, Device dev) {
  if (B == B_ && L == L_ && !acts_.empty() && acts_[0]->q.device() == dev) return;
  B_ = B, L_ = L;
  const int64_t R = B * L, d = config_.d_model, ff = config_.ff_dim, H = config_.heads;
  auto t = [&](Shape s) { return Tensor::empty(s, dev); };
  acts_.clear();
  layer_out_.clear();
  for (int64_t l = 0; l < config_.layers; ++l) {
    auto a = std::make_unique<LayerActs>();
    for (Tensor* x : {&a->q, &a->k, &a->v, &a->att, &a->res1, &a->x1, &a->res2}) *x = t({R, d});
    if (config_.attention == AttentionKind::causal_linear) {
      a->fq = t({R, d});
      a->fk = t({R, d});
    } else {
      a->probs = t({B, H, L, L});
    }
    for (Tensor* x : {&a->mean1, &a->rstd1, &a->mean2, &a->rstd2}) *x = t({R});
    a->h = t({R, ff});
    a->ad = t({R, ff});
    acts_.push_back(std::move(a));
    layer_out_.push_back(t({R, d}));
  }
  final_mean_ = t({R});
  final_rstd_ = t({R});
  grads_ = std::make_unique<GradBuffers>();
  for (Tensor* x : {&grads_->dres, &grads_->dtmp, &grads_->dx1, &grads_->datt, &grads_->dq, &grads_->dk,
                    &grads_->dv, &grads_->dfq, &grads_->dfk, &grads_->dcur, &grads_->dnext, &grads_->o})
    *x = t({R, d});
  grads_->dff = t({R, ff});
}

// Each dropout site of each layer draws from its own stream of the step's seed.
static uint64_t site_seed(uint64_t seed, size_t layer, int site) {
  return seed ^ (0x9E3779B97F4A7C15ull * (layer * 4 + site + 1));
}

void TransformerStack::forward(const Tensor& x, Tensor& y, bool train, uint64_t seed) {
  check(x.ndim() == 3 && x.dim(2) == config_.d_model,
        "transformer input must be [B, L, " + std::to_string(config_.d_model) + "], got " + shape_str(x.shape()));
  check_shape(y, x.shape(), "transformer output");
  plan(x.dim(0), x.dim(1), x.device());
  input_ = x.reshape({B_ * L_, config_.d_model});
  train_ = train && config_.dropout > 0.f;
  seed_ = seed;
  for (size_t l = 0; l < layers_.size(); ++l) layer_forward(l, l ? layer_out_[l - 1] : input_, train_, seed);
  Tensor y2 = y.reshape({B_ * L_, config_.d_model});
  layernorm_forward(layer_out_.back(), params_.value(norm_g_), params_.value(norm_b_), y2, final_mean_,
                    final_rstd_);
}

void TransformerStack::layer_forward(size_t l, const Tensor& x, bool train, uint64_t seed) {
  const LayerParams& p = layers_[l];
  LayerActs& a = *acts_[l];
  const Shape heads4{B_, L_, config_.heads, config_.head_dim};
  auto V = [&](size_t i) { return params_.value(i); };
  Tensor& o = grads_->o;
  const float drop = config_.dropout;

  linear_forward(x, V(p.wq), V(p.bq), a.q);
  linear_forward(x, V(p.wk), V(p.bk), a.k);
  linear_forward(x, V(p.wv), V(p.bv), a.v);
  Tensor att4 = a.att.reshape(heads4);
  if (config_.attention == AttentionKind::causal_linear) {
    phi_->forward(a.q, a.fq);
    phi_->forward(a.k, a.fk);
    causal_linear_attention_forward(a.fq.reshape(heads4), a.fk.reshape(heads4), a.v.reshape(heads4), Tensor(), att4);
  } else {
    softmax_attention_forward(a.q.reshape(heads4), a.k.reshape(heads4), a.v.reshape(heads4), Tensor(), true, a.probs,
                              att4);
  }
  linear_forward(a.att, V(p.wo), V(p.bo), o);
  if (train) dropout_forward(o, drop, site_seed(seed, l, 0), o);
  add(x, o, a.res1);
  layernorm_forward(a.res1, V(p.g1), V(p.be1), a.x1, a.mean1, a.rstd1);
  linear_forward(a.x1, V(p.w1), V(p.b1), a.h);
  relu_forward(a.h, a.ad);
  if (train) dropout_forward(a.ad, drop, site_seed(seed, l, 1), a.ad);
  linear_forward(a.ad, V(p.w2), V(p.b2), o);
  if (train) dropout_forward(o, drop, site_seed(seed, l, 2), o);
  add(a.x1, o, a.res2);
  layernorm_forward(a.res2, V(p.g2), V(p.be2), layer_out_[l], a.mean2, a.rstd2);
}

void TransformerStack::backward(const Tensor& dy, Tensor& dx) {
  check(!acts_.empty() && dy.numel() == B_ * L_ * config_.d_model,
        "transformer backward: gradient " + shape_str(dy.shape()) + " does not match the last forward [" +
            std::to_string(B_) + ", " + std::to_string(L_) + ", " + std::to_string(config_.d_model) + "]");
  GradBuffers& g = *grads_;
  Tensor dg = params_.grad(norm_g_), db = params_.grad(norm_b_);
  layernorm_backward(layer_out_.back(), params_.value(norm_g_), final_mean_, final_rstd_,
                     dy.reshape({B_ * L_, config_.d_model}), g.dcur, dg, db);
  for (size_t l = layers_.size(); l-- > 0;) {
    layer_backward(l, l ? layer_out_[l - 1] : input_, g.dcur, g.dnext, seed_);
    std::swap(g.dcur, g.dnext);
  }
  if (dx.defined()) dx.copy_from(g.dcur);
}

void TransformerStack::layer_backward(size_t l, const Tensor& x, const Tensor& dy, Tensor& dx, uint64_t seed) {
  const LayerParams& p = layers_[l];
  LayerActs& a = *acts_[l];
  GradBuffers& g = *grads_;
  const Shape heads4{B_, L_, config_.heads, config_.head_dim};
  auto V = [&](size_t i) { return params_.value(i); };
  auto G = [&](size_t i) { return params_.grad(i); };
  const float drop = config_.dropout;

  // x2 = norm2(res2), res2 = x1 + dropout(linear2(dropout(relu(linear1(x1)))))
  Tensor dg2 = G(p.g2), dbe2 = G(p.be2), dg1 = G(p.g1), dbe1 = G(p.be1);
  layernorm_backward(a.res2, V(p.g2), a.mean2, a.rstd2, dy, g.dres, dg2, dbe2);
  const Tensor* dff_out = &g.dres;
  if (train_) {
    dropout_backward(g.dres, drop, site_seed(seed, l, 2), g.dtmp);
    dff_out = &g.dtmp;
  }
  Tensor dW2 = G(p.w2), db2 = G(p.b2);
  linear_backward(a.ad, V(p.w2), *dff_out, g.dff, dW2, db2);
  if (train_) dropout_backward(g.dff, drop, site_seed(seed, l, 1), g.dff);
  relu_backward(a.h, g.dff, g.dff);
  Tensor dW1 = G(p.w1), db1 = G(p.b1);
  linear_backward(a.x1, V(p.w1), g.dff, g.dx1, dW1, db1);
  accumulate(g.dx1, g.dres);

  // x1 = norm1(res1), res1 = x + dropout(out_proj(attention))
  layernorm_backward(a.res1, V(p.g1), a.mean1, a.rstd1, g.dx1, g.dres, dg1, dbe1);
  const Tensor* dattn_out = &g.dres;
  if (train_) {
    dropout_backward(g.dres, drop, site_seed(seed, l, 0), g.dtmp);
    dattn_out = &g.dtmp;
  }
  Tensor dWo = G(p.wo), dbo = G(p.bo);
  linear_backward(a.att, V(p.wo), *dattn_out, g.datt, dWo, dbo);
  Tensor dq4 = g.dq.reshape(heads4), dk4 = g.dk.reshape(heads4), dv4 = g.dv.reshape(heads4);
  if (config_.attention == AttentionKind::causal_linear) {
    Tensor dfq4 = g.dfq.reshape(heads4), dfk4 = g.dfk.reshape(heads4);
    causal_linear_attention_backward(a.fq.reshape(heads4), a.fk.reshape(heads4), a.v.reshape(heads4), Tensor(),
                                     g.datt.reshape(heads4), dfq4, dfk4, dv4);
    phi_->backward(a.q, g.dfq, g.dq);
    phi_->backward(a.k, g.dfk, g.dk);
  } else {
    softmax_attention_backward(a.q.reshape(heads4), a.k.reshape(heads4), a.v.reshape(heads4), Tensor(), a.probs,
                               g.datt.reshape(heads4), dq4, dk4, dv4);
  }
  Tensor dWq = G(p.wq), dbq = G(p.bq), dWk = G(p.wk), dbk = G(p.bk), dWv = G(p.wv), dbv = G(p.bv);
  linear_backward(x, V(p.wq), g.dq, dx, dWq, dbq);
  linear_backward(x, V(p.wk), g.dk, g.dtmp, dWk, dbk);
  accumulate(dx, g.dtmp);
  linear_backward(x, V(p.wv), g.dv, g.dtmp, dWv, dbv);
  accumulate(dx, g.dtmp);
  accumulate(dx, g.dres);
}

}  // namespace lt
