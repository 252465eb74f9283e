// TransformerStack: parameters, training forward/backward. The recurrent step
// and prefill live in transformer_step.cpp.
#include <cmath>
#include <functional>
#include <random>

#include "attention/attention.h"
#include "common/random.h"
#include "model/transformer.h"
#include "model/transformer_internal.h"
#include "ops/ops.h"

namespace lt {

const char* attention_name(AttentionKind k, Direction d) {
  if (k == AttentionKind::softmax) return "softmax";
  if (k == AttentionKind::lsh) return "lsh";
  return d == Direction::causal ? "causal-linear" : "linear";
}

std::string attention_name(const TransformerConfig& c) {
  if (c.attention == AttentionKind::lsh) return "lsh-" + std::to_string(c.lsh_rounds);
  return attention_name(c.attention, c.direction);
}

namespace {
// N of lsh-N or causal-lsh-N; 0 for any other name.
int64_t lsh_rounds_of(const std::string& s) {
  const std::string rounds = s.substr(s.rfind("causal-", 0) == 0 ? 7 : 0);
  if (rounds.rfind("lsh-", 0) != 0) return 0;
  const std::string n = rounds.substr(4);
  if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos) return 0;
  const int64_t r = std::stoll(n);
  return r >= 1 && r <= 64 ? r : 0;
}
}  // namespace

AttentionKind parse_attention(const std::string& s) {
  if (s == "causal-linear" || s == "linear") return AttentionKind::linear;
  if (s == "softmax" || s == "full") return AttentionKind::softmax;
  if (lsh_rounds_of(s) > 0) return AttentionKind::lsh;
  throw Error("unknown attention '" + s + "' (expected causal-linear, linear, softmax or lsh-N, N rounds in 1..64)");
}

void TransformerConfig::set_attention(const std::string& name) {
  attention = parse_attention(name);
  if (attention == AttentionKind::lsh) lsh_rounds = lsh_rounds_of(name);
}

LshOptions TransformerConfig::lsh_options() const {
  LshOptions o;
  o.rounds = lsh_rounds;
  o.buckets = lsh_buckets;
  o.chunk = lsh_chunk;
  o.causal = direction == Direction::causal;
  return o;
}

const char* direction_name(Direction d) { return d == Direction::causal ? "causal" : "bidirectional"; }

Direction parse_direction(const std::string& s) {
  if (s == "causal") return Direction::causal;
  if (s == "bidirectional") return Direction::bidirectional;
  throw Error("unknown direction '" + s + "' (expected causal or bidirectional)");
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
  check(features >= 0 && features <= 65536, "feature width " + std::to_string(features) + " outside 0..65536");
  if (attention == AttentionKind::lsh) lsh_options().validate();
  check(ff_conv >= 0 && ff_conv <= 31, "the feed-forward convolution's taps must be at most 31, got " +
                                           std::to_string(ff_conv));
  check(ff_conv % 2 == 1 || ff_conv == 0 || direction == Direction::causal,
        "a bidirectional stack's feed-forward convolution is centred: its taps must be odd, got " +
            std::to_string(ff_conv));
}

int64_t TransformerConfig::parameter_count() const {
  const int64_t d = d_model, ff = ff_dim, projections = attention == AttentionKind::lsh ? 3 : 4;
  return layers * (projections * (d * d + d) + 2 * d * ff + ff + d + 4 * d + ff_conv * ff + (ff_conv ? ff : 0)) + 2 * d;
}

TransformerStack::TransformerStack(const TransformerConfig& config, Parameters& params, const std::string& prefix,
                                   Device device)
    : config_(config), params_(params), prefix_(prefix), step_(kStepSlots) {
  config_.validate();
  const int64_t d = config_.d_model, ff = config_.ff_dim;
  FeatureMapOptions fo;
  fo.head_dim = config_.head_dim;
  fo.features = config_.features;
  fo.device = device;
  for (int64_t i = 0; i < config_.layers; ++i) {
    if (config_.attention == AttentionKind::linear) {
      fo.seed = uint64_t(i);  // each layer its own first draw; init_parameters and load replace it
      phis_.push_back(make_feature_map(config_.feature_map, fo));
    }
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    LayerIndices lp;
    auto linear = [&](const std::string& name, int64_t out, int64_t in, size_t& w, size_t& b) {
      w = params.add(p + name + ".weight", {out, in});
      b = params.add(p + name + ".bias", {out});
    };
    linear("attention.query_projection", d, d, lp.wq, lp.bq);
    if (config_.attention != AttentionKind::lsh)  // LSH keys are the normalised queries (shared QK)
      linear("attention.key_projection", d, d, lp.wk, lp.bk);
    else
      lp.wk = lp.bk = kNoTensor;
    linear("attention.value_projection", d, d, lp.wv, lp.bv);
    linear("attention.out_projection", d, d, lp.wo, lp.bo);
    linear("linear1", ff, d, lp.w1, lp.b1);
    if (config_.ff_conv > 0)  // torch.nn.Conv1d(ff, ff, K, groups=ff)'s weight [ff, 1, K] without its middle axis
      linear("ff_conv", ff, config_.ff_conv, lp.wc, lp.bc);
    else
      lp.wc = lp.bc = kNoTensor;
    linear("linear2", d, ff, lp.w2, lp.b2);
    lp.g1 = params.add(p + "norm1.weight", {d});
    lp.be1 = params.add(p + "norm1.bias", {d});
    lp.g2 = params.add(p + "norm2.weight", {d});
    lp.be2 = params.add(p + "norm2.bias", {d});
    layers_.push_back(lp);
  }
  norm_g_ = params.add(prefix + "norm.weight", {d});
  norm_b_ = params.add(prefix + "norm.bias", {d});
  F_ = phis_.empty() ? config_.head_dim : phis_[0]->feature_dim(config_.head_dim);
  if (config_.attention == AttentionKind::lsh && config_.lsh_buckets > 1)
    rotations_ = Tensor::empty({config_.lsh_rounds, config_.head_dim, config_.lsh_buckets / 2});
}

std::map<std::string, Tensor> TransformerStack::feature_tensors() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < phis_.size(); ++i)
    for (const auto& [name, t] : phis_[i]->tensors())
      out[prefix_ + "layers." + std::to_string(i) + ".attention.inner_attention.feature_map." + name] = t;
  return out;
}

void TransformerStack::redraw_feature_maps(uint64_t seed) {
  for (size_t i = 0; i < phis_.size(); ++i) phis_[i]->redraw(splitmix64(seed + 0x6A09E667F3BCC909ull * (i + 1)));
  packed_.reset();  // a step prepared before would mix the old draw's state with the new map
}

void TransformerStack::set_dropout(float p) {
  check(p >= 0.f && p < 1.f, "dropout must be in [0, 1), got " + std::to_string(p));
  config_.dropout = p;
}

void TransformerStack::release_buffers() {
  grads_.reset();
  scratch_arena_ = Tensor();
  scratch_B_ = scratch_L_ = 0;
  chunk_pass_.reset();
  for (auto& b : step_) b.reset();
}

TransformerStack::~TransformerStack() = default;

void TransformerStack::init_parameters(uint64_t seed) {
  redraw_feature_maps(seed);
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
  for (const LayerIndices& lp : layers_) {
    for (auto [w, b] : {std::pair{lp.wq, lp.bq}, {lp.wk, lp.bk}, {lp.wv, lp.bv}, {lp.wo, lp.bo},
                        {lp.w1, lp.b1}, {lp.wc, lp.bc}, {lp.w2, lp.b2}}) {
      if (w == kNoTensor) continue;  // an LSH layer's key projection, a layer without ff_conv
      // torch's default for Linear and Conv1d alike: U(+-1/sqrt(fan_in)), fan_in = in or K.
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

namespace {
// Views in one arena that only grows: lay_out(view) asks view(shape) for each
// tensor in a fixed order, once for the sizes (view returns nothing), then
// for the views, each starting on a 64-byte boundary.
using ViewOf = std::function<Tensor(const Shape&)>;
void carve(Tensor& arena, Device dev, const std::function<void(const ViewOf& view, bool assign)>& lay_out) {
  int64_t used = 0;
  bool assign = false;
  const ViewOf view = [&](const Shape& s) {
    const int64_t n = shape_numel(s), at = used;
    used += (n + 15) / 16 * 16;
    return assign ? arena.rows(at, at + n).reshape(s) : Tensor();
  };
  lay_out(view, false);
  if (!arena.defined() || arena.device() != dev || arena.numel() < used) arena = Tensor::empty({used}, dev);
  used = 0;
  assign = true;
  lay_out(view, true);
}
}  // namespace

std::unique_ptr<EncoderPass> TransformerStack::new_pass() const { return std::make_unique<Pass>(*this); }

TransformerStack::Pass& TransformerStack::own(EncoderPass& pass) const {
  auto* p = dynamic_cast<Pass*>(&pass);
  check(p != nullptr && p->stack == this, "a transformer stack was given a pass another encoder made");
  return *p;
}

const TransformerStack::Pass& TransformerStack::own(const EncoderPass& pass) const {
  return own(const_cast<EncoderPass&>(pass));
}

// A pass's activations for (B, L): every layer's, the input and the final
// norm's statistics.
void TransformerStack::plan(Pass& p, int64_t B, int64_t L, Device dev) const {
  if (B == p.B && L == p.L && p.arena.defined() && p.arena.device() == dev) return;
  const int64_t R = B * L, d = config_.d_model, ff = config_.ff_dim, H = config_.heads;
  carve(p.arena, dev, [&](const ViewOf& t, bool assign) {
    std::vector<LayerActs> acts(size_t(config_.layers));
    std::vector<Tensor> outs;
    for (LayerActs& a : acts) {
      for (Tensor* x : {&a.q, &a.k, &a.v, &a.att, &a.res1, &a.x1, &a.res2}) *x = t({R, d});
      if (config_.attention == AttentionKind::linear) {
        a.fq = t({R, H * F_});
        a.fk = t({R, H * F_});
      } else if (config_.attention == AttentionKind::softmax) {
        a.probs = t({B, H, L, L});
      } else {  // lsh: int32 orders share the arena (4 bytes a value, as float)
        const Shape order{B, H, config_.lsh_rounds, L};
        const Tensor at = t(order);
        if (assign) a.lsh_order = Tensor::wrap(at.raw(), order, dev, DType::i32);
        a.lsh_lse = t({B, H, L});
      }
      for (Tensor* x : {&a.mean1, &a.rstd1, &a.mean2, &a.rstd2}) *x = t({R});
      a.h = t({R, ff});
      a.ad = t({R, ff});
      if (config_.ff_conv > 0) a.hc = t({R, ff});
      outs.push_back(t({R, d}));
    }
    Tensor input = t({R, d}), mean = t({R}), rstd = t({R});
    if (!assign) return;
    p.acts = std::move(acts);
    p.layer_out = std::move(outs);
    p.input = input;
    p.final_mean = mean;
    p.final_rstd = rstd;
  });
  p.B = B, p.L = L;
}

// The scratch of one forward or backward call for (B, L).
void TransformerStack::plan_scratch(int64_t B, int64_t L, Device dev) {
  if (B == scratch_B_ && L == scratch_L_ && scratch_arena_.defined() && scratch_arena_.device() == dev) return;
  const int64_t R = B * L, d = config_.d_model, ff = config_.ff_dim, H = config_.heads;
  carve(scratch_arena_, dev, [&](const ViewOf& t, bool assign) {
    auto g = std::make_unique<GradBuffers>();
    for (Tensor* x : {&g->dres, &g->dtmp, &g->dx1, &g->datt, &g->dq, &g->dk, &g->dv, &g->dcur, &g->dnext, &g->o})
      *x = t({R, d});
    g->dfq = t({R, H * F_});
    g->dfk = t({R, H * F_});
    g->dff = t({R, ff});
    if (config_.ff_conv > 0) g->dffc = t({R, ff});
    if (assign) grads_ = std::move(g);
  });
  scratch_B_ = B, scratch_L_ = L;
}

// Each dropout site of each layer draws from its own stream of the step's seed.
static uint64_t site_seed(uint64_t seed, size_t layer, int site) {
  return seed ^ (0x9E3779B97F4A7C15ull * (layer * 4 + site + 1));
}

void TransformerStack::forward(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options,
                               EncoderPass& pass) {
  run(x, lengths, y, options, own(pass), nullptr);
}

void TransformerStack::run(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options,
                           Pass& pass, RecurrentState* continuing) {
  check(x.ndim() == 3 && x.dim(2) == config_.d_model,
        "transformer input must be [B, L, " + std::to_string(config_.d_model) + "], got " + shape_str(x.shape()));
  check_shape(y, x.shape(), "transformer output");
  const int64_t B = x.dim(0), L = x.dim(1), d = config_.d_model;
  plan(pass, B, L, x.device());
  plan_scratch(B, L, x.device());
  set_lengths(pass, lengths);
  pass.input.copy_from(x.reshape({B * L, d}));
  pass.options = options;
  pass.options.train = options.train && config_.dropout > 0.f;
  pass.dropout = config_.dropout;
  for (size_t l = 0; l < layers_.size(); ++l) layer_forward(pass, l, l ? pass.layer_out[l - 1] : pass.input, continuing);
  Tensor y2 = y.reshape({B * L, d});
  layernorm_forward(pass.layer_out.back(), params_.value(norm_g_), params_.value(norm_b_), y2, pass.final_mean,
                    pass.final_rstd);
  pass.zero_padded_rows(y2);
}

void TransformerStack::set_lengths(Pass& pass, const Tensor& lengths) const {
  pass.lengths = Tensor();
  pass.lengths_host.clear();
  if (!lengths.defined()) return;
  check(lengths.ndim() == 1 && lengths.dim(0) == pass.B && lengths.dtype() == DType::i32,
        "sequence lengths must be int32 [" + std::to_string(pass.B) + "], got " + shape_str(lengths.shape()));
  pass.lengths_host = lengths.to_vector_i32();
  for (int32_t n : pass.lengths_host)
    check(n >= 0 && n <= pass.L, "sequence length " + std::to_string(n) + " outside 0.." + std::to_string(pass.L));
  pass.lengths = lengths.device() == params_.device() ? lengths : lengths.to(params_.device());
}

void TransformerStack::layer_forward(Pass& pass, size_t l, const Tensor& x, RecurrentState* continuing) {
  const LayerIndices& p = layers_[l];
  LayerActs& a = pass.acts[l];
  const int64_t B = pass.B, L = pass.L;
  const Shape heads4{B, L, config_.heads, config_.head_dim};
  auto V = [&](size_t i) { return params_.value(i); };
  Tensor& o = grads_->o;
  const float drop = pass.dropout;
  const bool train = pass.options.train;
  const uint64_t seed = pass.options.seed;
  const BatchRows rows{pass.options.first_row, B, 1};
  const Products P = pass.options.precision.products;

  linear_forward(x, V(p.wq), V(p.bq), a.q, P);
  if (config_.attention != AttentionKind::lsh) linear_forward(x, V(p.wk), V(p.bk), a.k, P);
  linear_forward(x, V(p.wv), V(p.bv), a.v, P);
  Tensor att4 = a.att.reshape(heads4);
  attention_forward(pass, l, att4, continuing);
  linear_forward(a.att, V(p.wo), V(p.bo), o, P);
  if (train) dropout_forward(o, drop, site_seed(seed, l, 0), o, rows);
  add(x, o, a.res1);
  layernorm_forward(a.res1, V(p.g1), V(p.be1), a.x1, a.mean1, a.rstd1);
  linear_forward(a.x1, V(p.w1), V(p.b1), a.h, P);
  if (config_.ff_conv > 0) {
    Tensor h3 = a.h.reshape({B, L, config_.ff_dim}), hc3 = a.hc.reshape({B, L, config_.ff_dim});
    if (continuing) {  // a causal stack's chunk after the positions of the state's window
      Tensor window = state_views(*continuing, l).conv;
      depthwise_conv_continue(h3, V(p.wc), V(p.bc), window, hc3);
    } else {
      depthwise_conv_forward(h3, V(p.wc), V(p.bc), pass.lengths, config_.direction == Direction::causal, hc3);
    }
  }
  relu_forward(config_.ff_conv > 0 ? a.hc : a.h, a.ad);
  if (train) dropout_forward(a.ad, drop, site_seed(seed, l, 1), a.ad, rows);
  linear_forward(a.ad, V(p.w2), V(p.b2), o, P);
  if (train) dropout_forward(o, drop, site_seed(seed, l, 2), o, rows);
  add(a.x1, o, a.res2);
  layernorm_forward(a.res2, V(p.g2), V(p.be2), pass.layer_out[l], a.mean2, a.rstd2);
}

// Layer l's attention of its q, k, v projections into att4 [B, L, H, E].
void TransformerStack::attention_forward(Pass& pass, size_t l, Tensor& att4, RecurrentState* continuing) {
  LayerActs& a = pass.acts[l];
  const Tensor& lengths = pass.lengths;
  const Shape heads4{pass.B, pass.L, config_.heads, config_.head_dim}, features4{pass.B, pass.L, config_.heads, F_};
  const bool causal = config_.direction == Direction::causal;
  const Tensor q4 = a.q.reshape(heads4), k4 = a.k.reshape(heads4), v4 = a.v.reshape(heads4);
  if (config_.attention == AttentionKind::softmax) {
    softmax_attention_forward(q4, k4, v4, lengths, causal, a.probs, att4);
    return;
  }
  if (config_.attention == AttentionKind::lsh) {
    // Fresh rotations every pass (Reformer section 2), from the pass's seed:
    // a resumed run draws what the uninterrupted one drew.
    if (rotations_.defined()) draw_lsh_rotations(site_seed(pass.options.seed, l, 3), rotations_);
    lsh_attention_forward(q4, v4, rotations_, lengths, config_.lsh_options(), a.lsh_order, a.lsh_lse, att4);
    return;
  }
  const FeatureMap& phi = *phis_[l];
  Tensor fq4 = a.fq.reshape(features4), fk4 = a.fk.reshape(features4);
  phi.forward(q4, fq4);
  phi.forward(k4, fk4);
  if (continuing) {
    StateViews st = state_views(*continuing, l);
    causal_linear_attention_continue(fq4, fk4, v4, lengths, st.a, st.b, att4);
  } else if (causal) {
    causal_linear_attention_forward(fq4, fk4, v4, lengths, att4, pass.options.precision.products == Products::tf32);
  } else {
    linear_attention_forward(fq4, fk4, v4, lengths, att4);
  }
}

// Gradients of layer l's attention: datt4 -> dq4, dk4 (not for lsh), dv4.
void TransformerStack::attention_backward(const Pass& pass, size_t l, const Tensor& datt4, Tensor& dq4, Tensor& dk4,
                                          Tensor& dv4) {
  const LayerActs& a = pass.acts[l];
  const Tensor& lengths = pass.lengths;
  GradBuffers& g = *grads_;
  const Shape heads4{pass.B, pass.L, config_.heads, config_.head_dim}, features4{pass.B, pass.L, config_.heads, F_};
  const Tensor q4 = a.q.reshape(heads4), k4 = a.k.reshape(heads4), v4 = a.v.reshape(heads4);
  if (config_.attention == AttentionKind::softmax) {
    softmax_attention_backward(q4, k4, v4, lengths, a.probs, datt4, dq4, dk4, dv4);
    return;
  }
  if (config_.attention == AttentionKind::lsh) {
    lsh_attention_backward(q4, v4, lengths, config_.lsh_options(), a.lsh_order, a.lsh_lse, a.att.reshape(heads4),
                           datt4, dq4, dv4);
    return;
  }
  const Tensor fq4 = a.fq.reshape(features4), fk4 = a.fk.reshape(features4);
  Tensor dfq4 = g.dfq.reshape(features4), dfk4 = g.dfk.reshape(features4);
  if (config_.direction == Direction::causal)
    causal_linear_attention_backward(fq4, fk4, v4, lengths, datt4, dfq4, dfk4, dv4,
                                     pass.options.precision.products == Products::tf32);
  else
    linear_attention_backward(fq4, fk4, v4, lengths, datt4, dfq4, dfk4, dv4);
  phis_[l]->backward(q4, dfq4, dq4);
  phis_[l]->backward(k4, dfk4, dk4);
}

void TransformerStack::backward(const EncoderPass& encoder_pass, const Tensor& dy, Tensor& dx) {
  const Pass& pass = own(encoder_pass);
  const int64_t B = pass.B, L = pass.L;
  check(!pass.acts.empty() && dy.numel() == B * L * config_.d_model,
        "transformer backward: gradient " + shape_str(dy.shape()) + " does not match its forward [" +
            std::to_string(B) + ", " + std::to_string(L) + ", " + std::to_string(config_.d_model) + "]");
  plan_scratch(B, L, pass.arena.device());
  GradBuffers& g = *grads_;
  Tensor dg = params_.grad(norm_g_), db = params_.grad(norm_b_);
  Tensor dy2 = dy.reshape({B * L, config_.d_model});
  if (!pass.lengths_host.empty()) {  // padded outputs are constants: whatever dy holds there reaches nothing
    g.dtmp.copy_from(dy2);
    pass.zero_padded_rows(g.dtmp);
    dy2 = g.dtmp;
  }
  layernorm_backward(pass.layer_out.back(), params_.value(norm_g_), pass.final_mean, pass.final_rstd, dy2, g.dcur,
                     dg, db);
  pass.zero_padded_rows(g.dcur);
  for (size_t l = layers_.size(); l-- > 0;) {
    layer_backward(pass, l, l ? pass.layer_out[l - 1] : pass.input, g.dcur, g.dnext);
    std::swap(g.dcur, g.dnext);
  }
  if (dx.defined()) dx.copy_from(g.dcur);
}

void TransformerStack::layer_backward(const Pass& pass, size_t l, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const LayerIndices& p = layers_[l];
  const LayerActs& a = pass.acts[l];
  GradBuffers& g = *grads_;
  const int64_t B = pass.B, L = pass.L;
  const bool train = pass.options.train;
  const uint64_t seed = pass.options.seed;
  const Products P = pass.options.precision.products;
  const Shape heads4{B, L, config_.heads, config_.head_dim};
  auto V = [&](size_t i) { return params_.value(i); };
  auto G = [&](size_t i) { return params_.grad(i); };
  const float drop = pass.dropout;
  const BatchRows rows{pass.options.first_row, B, 1};

  // x2 = norm2(res2), res2 = x1 + dropout(linear2(dropout(relu(linear1(x1)))))
  Tensor dg2 = G(p.g2), dbe2 = G(p.be2), dg1 = G(p.g1), dbe1 = G(p.be1);
  layernorm_backward(a.res2, V(p.g2), a.mean2, a.rstd2, dy, g.dres, dg2, dbe2);
  const Tensor* dff_out = &g.dres;
  if (train) {
    dropout_backward(g.dres, drop, site_seed(seed, l, 2), g.dtmp, rows);
    dff_out = &g.dtmp;
  }
  Tensor dW2 = G(p.w2), db2 = G(p.b2);
  linear_backward(a.ad, V(p.w2), *dff_out, g.dff, dW2, db2, P);
  if (train) dropout_backward(g.dff, drop, site_seed(seed, l, 1), g.dff, rows);
  if (config_.ff_conv > 0) {
    relu_backward(a.hc, g.dff, g.dffc);
    const Shape ff3{B, L, config_.ff_dim};
    Tensor dh3 = g.dff.reshape(ff3), dWc = G(p.wc), dbc = G(p.bc);
    depthwise_conv_backward(a.h.reshape(ff3), V(p.wc), pass.lengths, config_.direction == Direction::causal,
                            g.dffc.reshape(ff3), dh3, dWc, dbc);
  } else {
    relu_backward(a.h, g.dff, g.dff);
  }
  Tensor dW1 = G(p.w1), db1 = G(p.b1);
  linear_backward(a.x1, V(p.w1), g.dff, g.dx1, dW1, db1, P);
  accumulate(g.dx1, g.dres);

  // x1 = norm1(res1), res1 = x + dropout(out_proj(attention))
  layernorm_backward(a.res1, V(p.g1), a.mean1, a.rstd1, g.dx1, g.dres, dg1, dbe1);
  const Tensor* dattn_out = &g.dres;
  if (train) {
    dropout_backward(g.dres, drop, site_seed(seed, l, 0), g.dtmp, rows);
    dattn_out = &g.dtmp;
  }
  Tensor dWo = G(p.wo), dbo = G(p.bo);
  linear_backward(a.att, V(p.wo), *dattn_out, g.datt, dWo, dbo, P);
  Tensor dq4 = g.dq.reshape(heads4), dk4 = g.dk.reshape(heads4), dv4 = g.dv.reshape(heads4);
  attention_backward(pass, l, g.datt.reshape(heads4), dq4, dk4, dv4);
  Tensor dWq = G(p.wq), dbq = G(p.bq), dWv = G(p.wv), dbv = G(p.bv);
  linear_backward(x, V(p.wq), g.dq, dx, dWq, dbq, P);
  if (config_.attention != AttentionKind::lsh) {
    Tensor dWk = G(p.wk), dbk = G(p.bk);
    linear_backward(x, V(p.wk), g.dk, g.dtmp, dWk, dbk, P);
    accumulate(dx, g.dtmp);
  }
  linear_backward(x, V(p.wv), g.dv, g.dtmp, dWv, dbv, P);
  accumulate(dx, g.dtmp);
  accumulate(dx, g.dres);
}

}  // namespace lt
