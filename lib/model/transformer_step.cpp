// The recurrent form of the stack (eq. 16-20): one position for a batch, with
// the per-layer state in one caller-owned flat tensor; and prefill, which
// consumes a known prefix in one parallel pass and returns the same state.
#include <algorithm>

#include "attention/attention.h"
#include "model/transformer.h"
#include "model/transformer_internal.h"
#include "ops/ops.h"

namespace lt {
namespace {
// Floats of one layer's feed-forward convolution window [B, K - 1, ff].
int64_t conv_window_numel(const TransformerConfig& c, int64_t B) {
  return c.ff_conv > 0 ? B * (c.ff_conv - 1) * c.ff_dim : 0;
}

// Floats of one layer's state. A bfloat16 S takes half as many (rounded up,
// so that Z stays 4-byte aligned).
// S [B, H, F, M] and Z [B, H, F], or the two KV caches; then the convolution window.
int64_t layer_state_numel(const TransformerConfig& c, int64_t F, int64_t B, int64_t T, DType dtype) {
  const int64_t H = c.heads, E = c.head_dim;
  if (c.attention != AttentionKind::linear) return 2 * B * T * H * E + conv_window_numel(c, B);
  const int64_t s = B * H * F * E;
  return (dtype == DType::bf16 ? (s + 1) / 2 : s) + B * H * F + conv_window_numel(c, B);
}
}  // namespace

bool StateLayout::operator==(const StateLayout& o) const {
  return layers == o.layers && heads == o.heads && head_dim == o.head_dim && attention == o.attention &&
         features == o.features && dtype == o.dtype && ff_conv == o.ff_conv && ff_dim == o.ff_dim;
}

std::string StateLayout::describe() const {
  using std::to_string;
  std::string s = to_string(layers) + " layers of " + to_string(heads) + " heads x " + to_string(head_dim) + ", ";
  if (attention == AttentionKind::linear)
    s += "linear attention of " + to_string(features) + " features, " + dtype_name(dtype) + " S";
  else
    s += std::string(attention_name(attention)) + " attention's KV cache";
  if (ff_conv > 0) s += ", a convolution window of " + to_string(ff_conv - 1) + " x " + to_string(ff_dim);
  return s;
}

void RecurrentState::reset() {
  buffer.zero();
  position = 0;
}

RecurrentState RecurrentState::fork() const {
  RecurrentState copy = *this;
  copy.buffer = buffer.clone();
  return copy;
}

int64_t TransformerStack::state_numel(int64_t batch, int64_t max_len, DType dtype) const {
  return config_.layers * layer_state_numel(config_, F_, batch, max_len, dtype);
}

StateLayout TransformerStack::state_layout(DType dtype) const {
  const bool linear = config_.attention == AttentionKind::linear;
  StateLayout s;
  s.layers = config_.layers;
  s.heads = config_.heads;
  s.head_dim = config_.head_dim;
  s.attention = config_.attention;
  s.features = linear ? F_ : 0;
  s.dtype = linear ? dtype : DType::f32;
  if (config_.ff_conv > 0) s.ff_conv = config_.ff_conv, s.ff_dim = config_.ff_dim;
  return s;
}

void TransformerStack::check_state(const RecurrentState& state) const {
  const StateLayout mine = state_layout(state.layout.dtype);
  if (state.layout != mine)
    throw Error("a recurrent state of " + state.layout.describe() + " given to a stack of " + mine.describe());
  const int64_t want = state_numel(state.batch, state.max_len, state.layout.dtype);
  if (state.buffer.numel() != want)
    throw Error("recurrent state has " + std::to_string(state.buffer.numel()) + " floats, expected " +
                std::to_string(want) + " for batch " + std::to_string(state.batch) + " and a " +
                dtype_name(state.layout.dtype) + " S");
}

// Reformer samples by recomputing the whole prefix at every step; that is
// not a state to carry, so the recurrent calls refuse LSH stacks.
void TransformerStack::check_recurrent_form() const {
  check(config_.attention != AttentionKind::lsh,
        "LSH attention (Reformer) has no recurrent form: it cannot generate step by step, continue a state or prefill");
}

RecurrentState TransformerStack::new_state(int64_t batch, int64_t max_len, DType dtype, bool zeroed) const {
  check_recurrent_form();
  check(config_.direction == Direction::causal, "a bidirectional stack has no recurrent form");
  check(batch >= 1 && max_len >= 1, "a recurrent state needs batch and length >= 1");
  check(dtype == DType::f32 || dtype == DType::bf16,
        std::string("a recurrent state's S is float32 or bfloat16, not ") + dtype_name(dtype));
  RecurrentState s;
  s.layout = state_layout(dtype);
  s.buffer = Tensor::empty({state_numel(batch, max_len, s.layout.dtype)}, params_.device());
  if (zeroed) s.buffer.zero();
  s.batch = batch;
  s.max_len = max_len;
  return s;
}

TransformerStack::StateViews TransformerStack::state_views(const RecurrentState& state, size_t l) const {
  const int64_t B = state.batch, T = state.max_len;
  const int64_t H = config_.heads, E = config_.head_dim;
  const int64_t per = layer_state_numel(config_, F_, B, T, state.layout.dtype);
  const int64_t F = F_, attn = per - conv_window_numel(config_, B);
  Tensor flat = state.buffer.rows(l * per, (l + 1) * per);
  StateViews v;
  if (config_.ff_conv > 0) v.conv = flat.rows(attn, per).reshape({B, config_.ff_conv - 1, config_.ff_dim});
  if (config_.attention != AttentionKind::linear) {
    v.a = flat.rows(0, attn / 2).reshape({B, T, H, E});
    v.b = flat.rows(attn / 2, attn).reshape({B, T, H, E});
    return v;
  }
  const int64_t s = attn - B * H * F;
  v.b = flat.rows(s, attn).reshape({B, H, F});
  v.a = state.layout.dtype == DType::f32 ? flat.rows(0, s).reshape({B, H, F, E})
                                         : Tensor::wrap(flat.raw(), {B, H, F, E}, flat.device(), DType::bf16);
  return v;
}

void TransformerStack::step(RecurrentState& state, const Tensor& x, Tensor& y) {
  if (x.ndim() == 2 && x.dim(0) != state.batch)
    throw Error("step input has batch " + std::to_string(x.dim(0)) + ", the state " + std::to_string(state.batch));
  step_rows(state, nullptr, x, y);
  ++state.position;
}

void TransformerStack::step_rows(RecurrentState& state, const int64_t* rows, const Tensor& x, Tensor& y, int slot) {
  const int64_t d = config_.d_model, H = config_.heads, E = config_.head_dim, t = state.position;
  if (x.ndim() != 2 || x.dim(1) != d)
    throw Error("step input must be [B, " + std::to_string(d) + "], got " + shape_str(x.shape()));
  check_shape(y, x.shape(), "step output");
  const int64_t B = x.dim(0);
  check_state(state);
  if (rows && config_.attention != AttentionKind::linear)
    throw Error("a step over a pool's rows needs linear attention: a softmax state's KV cache grows with its position");
  if (config_.attention == AttentionKind::softmax && (t < 0 || t >= state.max_len))
    throw Error("step position " + std::to_string(t) + " is past the KV cache length " + std::to_string(state.max_len));
  if (slot < 0 || slot >= kStepSlots) throw Error("step slot " + std::to_string(slot) + " outside 0.." + std::to_string(kStepSlots - 1));
  if (!packed_) {
    if (slot != 0) throw Error("prepare_step before steps on several threads");
    prepare_step(step_products_);
  }
  StepBuffers& all = step_buffers(slot, B, x.device());
  auto first = [&](const Tensor& t) { return t.defined() ? t.rows(0, B) : t; };
  struct {
    Tensor qkv, q, k, v, att, o, x1, cur, next, h, hc, mean, rstd;
  } s{first(all.qkv), first(all.q),   first(all.k),    first(all.v), first(all.att),
      first(all.o),   first(all.x1),  first(all.cur),  first(all.next), first(all.h),
      first(all.hc),  first(all.mean), first(all.rstd)};
  // On the GPU the ops read a pool's rows from device memory: checked here,
  // then copied ahead of the launches (a host copy is not recorded in a
  // graph). -1 pads a batch to its bucket (StatePool), so that a few batch
  // sizes, each with its recorded graph, serve every step.
  if (rows && x.device() == Device::cuda) {
    for (int64_t b = 0; b < B; ++b)
      if (rows[b] < -1 || rows[b] >= state.batch)
        throw Error("step row " + std::to_string(rows[b]) + " outside the state's " + std::to_string(state.batch));
    Tensor map = all.row_map.rows(0, 2 * B);
    map.copy_from(Tensor::wrap(const_cast<int64_t*>(rows), {2 * B}, Device::cpu, DType::i32));
    rows = static_cast<const int64_t*>(map.raw());
  }
  auto V = [&](size_t i) { return params_.value(i); };
  const Shape heads3{B, H, E};
  auto launches = [&] {
    s.cur.copy_from(x);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const LayerIndices& p = layers_[l];
      const StepWeights::Layer& w = packed_->layers[l];
      StateViews st = state_views(state, l);
      w.qkv.forward(s.cur, w.bqkv, s.qkv, false, &all.rounded);
      Tensor att3 = s.att.reshape(heads3);
      if (config_.attention == AttentionKind::linear) {
        linear_attention_step_packed(s.qkv.reshape({B, 3, H, E}), *phis_[l], st.a, st.b, att3, rows);
      } else {
        copy_columns(s.qkv, 0, s.q);
        copy_columns(s.qkv, d, s.k);
        copy_columns(s.qkv, 2 * d, s.v);
        softmax_attention_step(s.q.reshape(heads3), s.k.reshape(heads3), s.v.reshape(heads3), t, st.a, st.b, att3);
      }
      w.o.forward(s.att, V(p.bo), s.o, false, &all.rounded);
      residual_layernorm_forward(s.o, s.cur, V(p.g1), V(p.be1), s.x1);
      if (config_.ff_conv > 0) {  // linear1, the convolution over this position and the window's, ReLU
        w.ff1.forward(s.x1, V(p.b1), s.h, false, &all.rounded);
        const Shape ff3{B, 1, config_.ff_dim};
        Tensor h3 = s.h.reshape(ff3), hc3 = s.hc.reshape(ff3);
        depthwise_conv_continue(h3, V(p.wc), V(p.bc), st.conv, hc3, rows);
        relu_forward(s.hc, s.hc);
        w.ff2.forward(s.hc, V(p.b2), s.o, false, &all.rounded);
      } else {
        w.ff1.forward(s.x1, V(p.b1), s.h, /*relu=*/true, &all.rounded);
        w.ff2.forward(s.h, V(p.b2), s.o, false, &all.rounded);
      }
      residual_layernorm_forward(s.o, s.x1, V(p.g2), V(p.be2), s.next);
      std::swap(s.cur, s.next);
    }
    layernorm_forward(s.cur, V(norm_g_), V(norm_b_), y, s.mean, s.rstd);
  };
  // A linear stack's step takes no position, so on the GPU one recording
  // serves every step of a state (softmax's position is a kernel argument).
  // Its buffers and weights are fixed until prepare_step or a new batch
  // size replaces step_; the state, batch, input, output and row map are the
  // key (one graph per batch size: a pool's steps take a few).
  if (x.device() == Device::cuda && config_.attention == AttentionKind::linear)
    all.graphs[B].run({uintptr_t(state.buffer.raw()), uintptr_t(state.layout.dtype), uintptr_t(x.raw()), uintptr_t(y.raw()),
                   uintptr_t(B), uintptr_t(rows)},
                  launches);
  else
    launches();
}

TransformerStack::StepBuffers& TransformerStack::step_buffers(int slot, int64_t B, Device device) {
  // Buffers for the largest batch so far; a smaller one steps in views of
  // their first rows, so a pool's steps of changing sizes allocate nothing.
  // One set per slot: a pool steps slices of its rows on several threads.
  std::unique_ptr<StepBuffers>& mine = step_[size_t(slot)];
  if (mine && mine->B >= B && mine->cur.device() == device) return *mine;
  const int64_t d = config_.d_model;
  mine = std::make_unique<StepBuffers>();
  mine->B = B;
  mine->qkv = Tensor::empty({B, 3 * d}, device);
  for (Tensor* b : {&mine->att, &mine->o, &mine->x1, &mine->cur, &mine->next}) *b = Tensor::empty({B, d}, device);
  if (config_.attention == AttentionKind::softmax)
    for (Tensor* b : {&mine->q, &mine->k, &mine->v}) *b = Tensor::empty({B, d}, device);
  mine->h = Tensor::empty({B, config_.ff_dim}, device);
  if (config_.ff_conv > 0) mine->hc = Tensor::empty({B, config_.ff_dim}, device);
  mine->mean = Tensor::empty({B}, device);
  mine->rstd = Tensor::empty({B}, device);
  if (device == Device::cuda) mine->row_map = Tensor::empty({2 * B}, device, DType::i32);
  int64_t rounded = 0;  // the bf16 products' rounded rows, for the widest input
  if (packed_)
    for (const StepWeights::Layer& w : packed_->layers)
      for (const StepLinear* s : {&w.qkv, &w.o, &w.ff1, &w.ff2})
        if (!s->W.defined()) rounded = std::max(rounded, s->packed.scratch_numel(B));
  if (rounded > 0) mine->rounded = Tensor::empty({rounded}, Device::cpu, DType::i32);
  return *mine;
}

void TransformerStack::reserve_step_rows(int slots, int64_t rows, Device device) {
  if (slots < 1 || slots > kStepSlots || rows < 1)
    throw Error("reserve_step_rows: " + std::to_string(slots) + " slots (1.." + std::to_string(kStepSlots) + ") of " +
                std::to_string(rows) + " rows (>= 1)");
  for (int s = 0; s < slots; ++s) step_buffers(s, rows, device);
}

void TransformerStack::reset_state_element(RecurrentState& state, int64_t row) const {
  check_state(state);
  check(row >= 0 && row < state.batch, "state element index out of range");
  for (size_t l = 0; l < layers_.size(); ++l) {
    StateViews v = state_views(state, l);
    v.a.rows(row, row + 1).zero();
    v.b.rows(row, row + 1).zero();
    if (config_.ff_conv > 0) v.conv.rows(row, row + 1).zero();
  }
}

void TransformerStack::prepare_step(Products products, bool pack_weights) {
  check_recurrent_form();
  const Device dev = params_.device();
  Precision{products}.check_runs_on(dev);
  const bool pack = pack_weights && StepLinear::packing_pays(dev, products);
  const int64_t d = config_.d_model;
  auto linear = [&](const Tensor& W) {
    StepLinear s;
    s.prepare(W, products, pack);
    return s;
  };
  auto w = std::make_unique<StepWeights>();
  for (const LayerIndices& p : layers_) {
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
  step_products_ = products;
  for (auto& b : step_) b.reset();  // a recorded step holds the old weights' addresses
}

void TransformerStack::prefill(const Tensor& x, Tensor& y, RecurrentState& state) {
  state.reset();
  continue_chunk(state, x, y);
}

void TransformerStack::continue_chunk(RecurrentState& state, const Tensor& x, Tensor& y) {
  check_recurrent_form();
  check(x.ndim() == 3 && x.dim(0) == state.batch && x.dim(2) == config_.d_model,
        "chunk input " + shape_str(x.shape()) + " does not match the state's batch " + std::to_string(state.batch));
  check_shape(y, x.shape(), "chunk output");
  check_state(state);
  const int64_t B = x.dim(0), T = x.dim(1), d = config_.d_model, t0 = state.position;
  check(config_.attention == AttentionKind::linear || t0 + T <= state.max_len,
        "a chunk of " + std::to_string(T) + " positions from " + std::to_string(t0) + " does not fit a KV cache of " +
            std::to_string(state.max_len));
  ForwardOptions eval;
  eval.precision.products = step_products_;
  const bool linear = config_.attention == AttentionKind::linear;
  if (linear || t0 == 0) {
    // The training pass in eval mode, whose linear attention continues the
    // state (eq. 18-20 over the chunk), as does the convolution its window.
    // Softmax from the empty prefix: its keys and values become the cache.
    if (!linear && config_.ff_conv > 0)
      for (size_t l = 0; l < layers_.size(); ++l) state_views(state, l).conv.zero();
    if (!chunk_pass_) chunk_pass_ = std::make_unique<Pass>(*this);
    run(x, Tensor(), y, eval, *chunk_pass_, &state);
    state.position += T;
    if (linear) return;
    const int64_t H = config_.heads, E = config_.head_dim, max_len = state.max_len;
    for (size_t l = 0; l < layers_.size(); ++l) {
      StateViews st = state_views(state, l);
      const LayerActs& a = chunk_pass_->acts[l];
      Tensor kc = st.a.reshape({B * max_len, H * E}), vc = st.b.reshape({B * max_len, H * E});
      Tensor k = a.k.reshape({B * T, H * E}), v = a.v.reshape({B * T, H * E});
      for (int64_t b = 0; b < B; ++b) {
        kc.rows(b * max_len, b * max_len + T).copy_from(k.rows(b * T, (b + 1) * T));
        vc.rows(b * max_len, b * max_len + T).copy_from(v.rows(b * T, (b + 1) * T));
      }
    }
    return;
  }
  // Softmax after a prefix has no parallel form over the cache: step through the chunk.
  Tensor xt = Tensor::empty({B, d}, x.device()), yt = Tensor::empty({B, d}, x.device());
  Tensor x2 = x.reshape({B * T, d}), y2 = y.reshape({B * T, d});
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) xt.rows(b, b + 1).copy_from(x2.rows(b * T + t, b * T + t + 1));
    step(state, xt, yt);
    for (int64_t b = 0; b < B; ++b) y2.rows(b * T + t, b * T + t + 1).copy_from(yt.rows(b, b + 1));
  }
}

void TransformerStack::copy_state_element(const RecurrentState& from_state, int64_t src, RecurrentState& to_state,
                                          int64_t dst) const {
  check(src >= 0 && src < from_state.batch && dst >= 0 && dst < to_state.batch, "state element index out of range");
  check_state(from_state);
  check_state(to_state);
  check(from_state.max_len == to_state.max_len && from_state.layout == to_state.layout,
        "copy between states of different length or dtype");
  for (size_t l = 0; l < layers_.size(); ++l) {
    StateViews from = state_views(from_state, l);
    StateViews to = state_views(to_state, l);
    to.a.rows(dst, dst + 1).copy_from(from.a.rows(src, src + 1));
    to.b.rows(dst, dst + 1).copy_from(from.b.rows(src, src + 1));
    if (config_.ff_conv > 0) to.conv.rows(dst, dst + 1).copy_from(from.conv.rows(src, src + 1));
  }
  to_state.position = from_state.position;
}

}  // namespace lt
