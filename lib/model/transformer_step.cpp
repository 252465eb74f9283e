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
  if (!packed_) pack_step_weights(precision_);
  if (!step_ || step_->B != B || step_->cur.device() != x.device()) {
    step_ = std::make_unique<StepBuffers>();
    step_->B = B;
    step_->qkv = Tensor::empty({B, 3 * d}, x.device());
    for (Tensor* b : {&step_->att, &step_->o, &step_->x1, &step_->cur, &step_->next})
      *b = Tensor::empty({B, d}, x.device());
    if (config_.attention == AttentionKind::softmax)
      for (Tensor* b : {&step_->q, &step_->k, &step_->v}) *b = Tensor::empty({B, d}, x.device());
    step_->h = Tensor::empty({B, config_.ff_dim}, x.device());
    step_->mean = Tensor::empty({B}, x.device());
    step_->rstd = Tensor::empty({B}, x.device());
  }
  StepBuffers& s = *step_;
  auto V = [&](size_t i) { return params_.value(i); };
  const Shape heads3{B, H, E};
  s.cur.copy_from(x);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerParams& p = layers_[l];
    const StepWeights::Layer& w = packed_->layers[l];
    StateViews st = state_views(state, l, B, max_len);
    w.qkv.forward(s.cur, w.bqkv, s.qkv);
    Tensor att3 = s.att.reshape(heads3);
    if (config_.attention == AttentionKind::causal_linear) {
      linear_attention_step_packed(s.qkv.reshape({B, 3, H, E}), *phi_, st.a, st.b, att3);
    } else {
      copy_columns(s.qkv, 0, s.q);
      copy_columns(s.qkv, d, s.k);
      copy_columns(s.qkv, 2 * d, s.v);
      softmax_attention_step(s.q.reshape(heads3), s.k.reshape(heads3), s.v.reshape(heads3), t, st.a, st.b, att3);
    }
    w.o.forward(s.att, V(p.bo), s.o);
    residual_layernorm_forward(s.o, s.cur, V(p.g1), V(p.be1), s.x1);
    w.ff1.forward(s.x1, V(p.b1), s.h, /*relu=*/true);
    w.ff2.forward(s.h, V(p.b2), s.o);
    residual_layernorm_forward(s.o, s.x1, V(p.g2), V(p.be2), s.next);
    std::swap(s.cur, s.next);
  }
  layernorm_forward(s.cur, V(norm_g_), V(norm_b_), y, s.mean, s.rstd);
}

void TransformerStack::pack_step_weights(StepPrecision precision) {
  const Device dev = params_.device();
  // Packing pays on an AVX-512 CPU; elsewhere OpenBLAS or cuBLAS take the
  // plain matrices. On CUDA bf16 is the state's precision alone.
  const bool pack = dev == Device::cpu && (precision == StepPrecision::bf16 || cpu_has_avx512());
  const int64_t d = config_.d_model;
  auto linear = [&](const Tensor& W) {
    StepLinear s;
    if (pack)
      s.packed = PackedLinear(W, precision);
    else
      s.W = W;
    return s;
  };
  auto w = std::make_unique<StepWeights>();
  for (const LayerParams& p : layers_) {
    Tensor wqkv = Tensor::empty({3 * d, d}, dev), bqkv = Tensor::empty({3 * d}, dev);
    int64_t part = 0;
    for (auto [wi, bi] : {std::pair{p.wq, p.bq}, {p.wk, p.bk}, {p.wv, p.bv}}) {
      wqkv.rows(part * d, (part + 1) * d).copy_from(params_.value(wi));
      bqkv.rows(part * d, (part + 1) * d).copy_from(params_.value(bi));
      ++part;
    }
    w->layers.push_back({linear(wqkv), linear(params_.value(p.wo)), linear(params_.value(p.w1)),
                         linear(params_.value(p.w2)), bqkv});
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
