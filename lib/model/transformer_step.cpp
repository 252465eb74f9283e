// The recurrent form of the stack (eq. 16-20): one position for a batch, with
// the per-layer state in one caller-owned flat tensor; and prefill, which
// consumes a known prefix in one parallel pass and returns the same state.
#include <algorithm>

#include "lt/attention.h"
#include "lt/ops.h"
#include "lt/transformer.h"
#include "model/transformer_internal.h"

namespace lt {
namespace {
// Floats of one layer's state. A bfloat16 S takes half as many (rounded up,
// so that Z stays 4-byte aligned).
int64_t layer_state_numel(const TransformerConfig& c, int64_t B, int64_t T, bool bf16_state) {
  const int64_t H = c.heads, E = c.head_dim;
  if (c.attention != AttentionKind::causal_linear) return 2 * B * T * H * E;
  const int64_t s = B * H * E * E;
  return (bf16_state ? (s + 1) / 2 : s) + B * H * E;
}
}  // namespace

bool TransformerStack::bf16_state() const {
  return config_.attention == AttentionKind::causal_linear && step_precision() == StepPrecision::bf16;
}

int64_t TransformerStack::state_numel(int64_t batch, int64_t max_len) const {
  return config_.layers * layer_state_numel(config_, batch, max_len, bf16_state());
}

TransformerStack::StateViews TransformerStack::state_views(Tensor& state, size_t l, int64_t B,
                                                           int64_t T) const {
  check(state.numel() == state_numel(B, T),
        "recurrent state has " + std::to_string(state.numel()) + " floats, expected " +
            std::to_string(state_numel(B, T)) + " for batch " + std::to_string(B) + " at " +
            precision_name(step_precision()) + " precision");
  const int64_t H = config_.heads, E = config_.head_dim;
  const bool bf16 = bf16_state();
  const int64_t per = layer_state_numel(config_, B, T, bf16);
  Tensor flat = state.reshape({state.numel()}).rows(l * per, (l + 1) * per);
  if (config_.attention != AttentionKind::causal_linear)
    return {flat.rows(0, per / 2).reshape({B, T, H, E}), flat.rows(per / 2, per).reshape({B, T, H, E})};
  const int64_t s = per - B * H * E;
  Tensor Z = flat.rows(s, per).reshape({B, H, E});
  if (!bf16) return {flat.rows(0, s).reshape({B, H, E, E}), Z};
  return {Tensor::wrap(flat.raw(), {B, H, E, E}, state.device(), DType::bf16), Z};
}

void TransformerStack::step(Tensor& state, int64_t max_len, const Tensor& x, int64_t t, Tensor& y) {
  const int64_t d = config_.d_model, H = config_.heads, E = config_.head_dim;
  check(x.ndim() == 2 && x.dim(1) == d, "step input must be [B, " + std::to_string(d) + "], got " + shape_str(x.shape()));
  check_shape(y, x.shape(), "step output");
  const int64_t B = x.dim(0);
  if (config_.attention == AttentionKind::softmax)
    check(t >= 0 && t < max_len, "step position " + std::to_string(t) + " is past the KV cache length " +
                                     std::to_string(max_len));
  if (!step_ || step_->B != B || step_->q.device() != x.device()) {
    step_ = std::make_unique<StepBuffers>();
    step_->B = B;
    for (Tensor* b : {&step_->q, &step_->k, &step_->v, &step_->fq, &step_->fk, &step_->att, &step_->o,
                      &step_->res1, &step_->x1, &step_->res2, &step_->cur, &step_->next})
      *b = Tensor::empty({B, d}, x.device());
    step_->mean = Tensor::empty({B}, x.device());
    step_->rstd = Tensor::empty({B}, x.device());
    step_->h = Tensor::empty({B, config_.ff_dim}, x.device());
    if (x.device() == Device::cpu) step_->qkv = Tensor::empty({B, 3 * d}, x.device());  // packed path
  }
  StepBuffers& s = *step_;
  auto V = [&](size_t i) { return params_.value(i); };
  const Shape heads3{B, H, E};
  s.cur.copy_from(x);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerParams& p = layers_[l];
    // Packed weights (PackedLinear) when pack_step_weights made them: q, k
    // and v as one product, ReLU inside the first feed-forward product.
    const StepWeights::Layer* w = packed_ ? &packed_->layers[l] : nullptr;
    StateViews st = state_views(state, l, B, max_len);
    if (w) {
      w->qkv.forward(s.cur, w->bqkv, s.qkv);
      const float* qkv = s.qkv.data();
      float *q = s.q.data(), *k = s.k.data(), *v = s.v.data();
      for (int64_t r = 0; r < B; ++r) {
        std::copy_n(qkv + r * 3 * d, d, q + r * d);
        std::copy_n(qkv + r * 3 * d + d, d, k + r * d);
        std::copy_n(qkv + r * 3 * d + 2 * d, d, v + r * d);
      }
    } else {
      linear_forward(s.cur, V(p.wq), V(p.bq), s.q);
      linear_forward(s.cur, V(p.wk), V(p.bk), s.k);
      linear_forward(s.cur, V(p.wv), V(p.bv), s.v);
    }
    Tensor att3 = s.att.reshape(heads3);
    if (config_.attention == AttentionKind::causal_linear) {
      phi_->forward(s.q, s.fq);
      phi_->forward(s.k, s.fk);
      linear_attention_step(s.fq.reshape(heads3), s.fk.reshape(heads3), s.v.reshape(heads3), st.a, st.b, att3);
    } else {
      softmax_attention_step(s.q.reshape(heads3), s.k.reshape(heads3), s.v.reshape(heads3), t, st.a, st.b, att3);
    }
    if (w)
      w->o.forward(s.att, V(p.bo), s.o);
    else
      linear_forward(s.att, V(p.wo), V(p.bo), s.o);
    add(s.cur, s.o, s.res1);
    layernorm_forward(s.res1, V(p.g1), V(p.be1), s.x1, s.mean, s.rstd);
    if (w) {
      w->ff1.forward(s.x1, V(p.b1), s.h, /*relu=*/true);
      w->ff2.forward(s.h, V(p.b2), s.o);
    } else {
      linear_forward(s.x1, V(p.w1), V(p.b1), s.h);
      relu_forward(s.h, s.h);
      linear_forward(s.h, V(p.w2), V(p.b2), s.o);
    }
    add(s.x1, s.o, s.res2);
    layernorm_forward(s.res2, V(p.g2), V(p.be2), s.next, s.mean, s.rstd);
    std::swap(s.cur, s.next);
  }
  layernorm_forward(s.cur, V(norm_g_), V(norm_b_), y, s.mean, s.rstd);
}

void TransformerStack::pack_step_weights(StepPrecision precision) {
  if (params_.device() == Device::cuda) {  // cuBLAS reads the weights where they are; bf16 is the state's
    precision_ = precision;
    return;
  }
  packed_.reset();
  precision_ = StepPrecision::fp32;
  if (precision == StepPrecision::fp32 && !cpu_has_avx512()) return;  // OpenBLAS it is
  const int64_t d = config_.d_model;
  auto w = std::make_unique<StepWeights>();
  for (const LayerParams& p : layers_) {
    Tensor wqkv = Tensor::empty({3 * d, d}), bqkv = Tensor::empty({3 * d});
    int64_t part = 0;
    for (auto [wi, bi] : {std::pair{p.wq, p.bq}, {p.wk, p.bk}, {p.wv, p.bv}}) {
      wqkv.rows(part * d, (part + 1) * d).copy_from(params_.value(wi));
      bqkv.rows(part * d, (part + 1) * d).copy_from(params_.value(bi));
      ++part;
    }
    w->layers.push_back({PackedLinear(wqkv, precision), PackedLinear(params_.value(p.wo), precision),
                         PackedLinear(params_.value(p.w1), precision), PackedLinear(params_.value(p.w2), precision),
                         bqkv});
  }
  packed_ = std::move(w);
  precision_ = precision;
}

StepPrecision TransformerStack::step_precision() const { return precision_; }

void TransformerStack::prefill(const Tensor& x, Tensor& y, Tensor& state, int64_t max_len) {
  forward(x, y, /*train=*/false, 0);
  const int64_t B = B_, L = L_, H = config_.heads, E = config_.head_dim;
  check(config_.attention == AttentionKind::causal_linear || L <= max_len,
        "prefill of " + std::to_string(L) + " positions does not fit a KV cache of " + std::to_string(max_len));
  const Shape heads4{B, L, H, E};
  for (size_t l = 0; l < layers_.size(); ++l) {
    StateViews st = state_views(state, l, B, max_len);
    const LayerActs& a = *acts_[l];
    if (config_.attention == AttentionKind::causal_linear) {
      linear_attention_state(a.fk.reshape(heads4), a.v.reshape(heads4), st.a, st.b);
      continue;
    }
    // KV cache rows 0..L-1 of every batch element are the prefix's keys and values.
    Tensor kc = st.a.reshape({B * max_len, H * E}), vc = st.b.reshape({B * max_len, H * E});
    Tensor k = a.k.reshape({B * L, H * E}), v = a.v.reshape({B * L, H * E});
    for (int64_t b = 0; b < B; ++b) {
      kc.rows(b * max_len, b * max_len + L).copy_from(k.rows(b * L, (b + 1) * L));
      vc.rows(b * max_len, b * max_len + L).copy_from(v.rows(b * L, (b + 1) * L));
    }
  }
}

void TransformerStack::copy_state_element(const Tensor& src_state, int64_t src_batch, int64_t src,
                                          Tensor& dst_state, int64_t dst_batch, int64_t dst,
                                          int64_t max_len) const {
  check(src >= 0 && src < src_batch && dst >= 0 && dst < dst_batch, "state element index out of range");
  Tensor src_copy = src_state;
  for (size_t l = 0; l < layers_.size(); ++l) {
    StateViews from = state_views(src_copy, l, src_batch, max_len);
    StateViews to = state_views(dst_state, l, dst_batch, max_len);
    to.a.rows(dst, dst + 1).copy_from(from.a.rows(src, src + 1));
    to.b.rows(dst, dst + 1).copy_from(from.b.rows(src, src + 1));
  }
}

}  // namespace lt
