// SequenceModel: input part (tokens or feature frames) + encoder (the
// TransformerStack or the BiLstm) + predictor + output head; training
// forward/backward and the recurrent form.
// Save and load are in sequence_model_io.cpp.
#include "model/sequence_model.h"

#include <cmath>
#include <random>

#include "core/grown_view.h"
#include "model/input_part.h"
#include "model/step_linear.h"
#include "ops/ops.h"

namespace lt {

SequenceBatch SequenceBatch::slice(int64_t begin, int64_t end) const {
  check(0 <= begin && begin < end && end <= rows, "batch slice out of range");
  SequenceBatch s;
  s.rows = end - begin;
  s.length = length;
  if (!inputs.empty()) s.inputs.assign(inputs.begin() + begin * length, inputs.begin() + end * length);
  if (!targets.empty()) s.targets.assign(targets.begin() + begin * length, targets.begin() + end * length);
  if (!features.empty()) {
    const size_t per_row = features.size() / size_t(rows);
    s.features.assign(features.begin() + begin * per_row, features.begin() + end * per_row);
  }
  if (labels.rows() > 0) {
    s.labels.labels.assign(labels.labels.begin() + labels.offsets[begin], labels.labels.begin() + labels.offsets[end]);
    for (int64_t r = begin; r <= end; ++r) s.labels.offsets.push_back(labels.offsets[r] - labels.offsets[begin]);
  }
  if (!first.empty()) {
    s.first.assign(first.begin() + begin, first.begin() + end);
    s.last.assign(last.begin() + begin, last.begin() + end);
  }
  if (!lengths.empty()) s.lengths.assign(lengths.begin() + begin, lengths.begin() + end);
  return s;
}

const char* encoder_kind_name(EncoderKind k) { return k == EncoderKind::bilstm ? "bilstm" : "transformer"; }

EncoderKind parse_encoder_kind(const std::string& s) {
  if (s == "transformer") return EncoderKind::transformer;
  if (s == "bilstm") return EncoderKind::bilstm;
  throw Error("encoder '" + s + "': expected transformer or bilstm");
}

void SequenceModelConfig::validate() const {
  check(vocabulary >= 1, "the vocabulary needs at least one token");
  check(input_features >= 0 && input_features <= (int64_t(1) << 16),
        "input_features " + std::to_string(input_features) + " outside 0..65536");
  check(max_positions >= 1, "a model needs at least one position");
  check(head.kind == HeadKind::mixture_of_logistics ? head.mixtures >= 1 : head.classes >= (head.kind == HeadKind::ctc ? 2 : 1),
        "the output head needs at least one class or mixture component (CTC: the blank and a label)");
  check(max_positions <= (int64_t(1) << 22), std::to_string(max_positions) + " positions is past lt's limit of 2^22");
  if (encoder == EncoderKind::bilstm) {
    lstm.validate();
    check(input_features > 0, "the bilstm encoder reads feature frames, not token ids");
    return;
  }
  transformer.validate();
  // A token model's position code is max_positions x d/2 floats, made before any weight is read.
  check(input_features > 0 || max_positions * (transformer.d_model / 2) <= (int64_t(1) << 28),
        std::to_string(max_positions) + " positions of width " + std::to_string(transformer.d_model) +
            " is past lt's limits (a 1 GiB position code)");
  check(transformer.d_model % 4 == 0, "d_model " + std::to_string(transformer.d_model) +
                                          " must be a multiple of 4 (embedding and position code are d/2 each, "
                                          "the position code needs an even width)");
}

int64_t SequenceModelConfig::width() const {
  return encoder == EncoderKind::bilstm ? 2 * lstm.hidden : transformer.d_model;
}

std::string SequenceModelConfig::encoder_name() const {
  return encoder == EncoderKind::bilstm ? "bilstm" : attention_name(transformer);
}

std::string SequenceModelConfig::describe_encoder() const {
  using std::to_string;
  if (encoder == EncoderKind::bilstm)
    return "bilstm, " + to_string(lstm.layers) + " layers, hidden " + to_string(lstm.hidden) + " per direction";
  return to_string(transformer.layers) + " layers, d " + to_string(transformer.d_model) + ", " +
         to_string(transformer.heads) + " heads, " + attention_name(transformer) +
         (transformer.ff_conv ? ", feed-forward convolution of " + to_string(transformer.ff_conv) : "");
}

bool SequenceModelConfig::runs_as_rnn() const {
  return encoder == EncoderKind::transformer && transformer.direction == Direction::causal &&
         transformer.attention == AttentionKind::linear;
}

// What a forward leaves for its backward. Storage only grows: a smaller
// batch or a shorter sequence takes views of it, so variable shapes allocate
// nothing after the largest.
struct ForwardPass::Buffers {
  const SequenceModel* model = nullptr;  // that planned it
  std::unique_ptr<EncoderPass> encoder;  // the encoder's activations
  Tensor ids, x, y, head;                // storage (ids: token ids or feature frames)
  // The views of its forward, and what its loss scored.
  int64_t rows = 0, length = 0, counted = 0;
  Tensor v_ids, v_x, v_y, v_head;
  HeadTargets targets;
  LossBuffers loss;
  Products head_products = Products::fp32;  // which backward repeats
};

ForwardPass::ForwardPass() : buf_(std::make_unique<Buffers>()) {}
ForwardPass::~ForwardPass() = default;
ForwardPass::ForwardPass(ForwardPass&&) noexcept = default;
ForwardPass& ForwardPass::operator=(ForwardPass&&) noexcept = default;

int64_t ForwardPass::counted() const { return buf_ ? buf_->counted : 0; }

Tensor ForwardPass::heads() const {
  check(buf_ && buf_->rows > 0, "heads() of a pass no forward filled");
  return buf_->v_head.reshape({buf_->rows, buf_->length, buf_->v_head.dim(1)});
}

// The model's scratch, which no pass's state outlives: the backward's
// gradients, and the recurrent form's buffers. Storage only grows.
struct SequenceModel::Buffers {
  Tensor dhead, dy, dx;  // storage of backward's gradients of head outputs, encoder outputs and inputs
  int64_t step_B = 0;
  Tensor step_x, step_y;    // [B, 1, d], [B, d]
  Tensor chunk_x, chunk_y;  // continue_chunk's [B, T, d]
  std::vector<Tensor> rows_x = std::vector<Tensor>(kStepSlots), rows_y = std::vector<Tensor>(kStepSlots);  // step_rows' [B, 1, d], [B, d] per slot, grown
  std::vector<Tensor> rows_rounded = std::vector<Tensor>(kStepSlots);  // step_rows' head product's scratch per slot
  StepLinear predictor;     // the head's product of a step, prepared by prepare_step
};

SequenceModel::SequenceModel(const SequenceModelConfig& config, Device device)
    : config_(config), device_(device), buf_(std::make_unique<Buffers>()) {
  config_.validate();
  require_device(device);
  const int64_t d = config_.transformer.d_model, F = config_.input_features;
  // Declared in the reference's order, which is also the flat buffer's (and
  // so the optimizer state's) layout. The paper's Bi-LSTM reads the frames
  // themselves; the transformer a projection of them beside a position code.
  if (config_.encoder == EncoderKind::bilstm) {
    input_ = make_frame_input(F);
    encoder_ = std::make_unique<BiLstm>(config_.lstm, F, params_, "lstm.", device);
  } else {
    input_ = F > 0 ? make_feature_input(params_, F, d) : make_token_input(params_, config_.vocabulary, d, config_.max_positions);
    auto stack = std::make_unique<TransformerStack>(config_.transformer, params_, "transformer.", device);
    stack_ = stack.get();
    encoder_ = std::move(stack);
  }
  predictor_w_ = params_.add("predictor.weight", {config_.head.width(), config_.width()});
  predictor_b_ = params_.add("predictor.bias", {config_.head.width()});
  params_.allocate(device);
}

SequenceModel::~SequenceModel() = default;

void SequenceModel::copy_feature_maps(const SequenceModel& other) {
  const std::map<std::string, Tensor> from = other.feature_tensors();
  for (auto& [name, t] : feature_tensors()) {
    Tensor dst = t;
    dst.copy_from(from.at(name));
  }
}

void SequenceModel::release_buffers() {
  encoder_->release_buffers();
  buf_ = std::make_unique<Buffers>();
  own_pass_ = ForwardPass();
}

void SequenceModel::set_dropout(float p) {
  encoder_->set_dropout(p);
  (config_.encoder == EncoderKind::bilstm ? config_.lstm.dropout : config_.transformer.dropout) = p;
}

void SequenceModel::init_parameters(uint64_t seed) {
  encoder_->init_parameters(seed);
  std::mt19937_64 gen(seed ^ 0x5DEECE66Dull);
  auto fill = [&](size_t idx, auto dist) {
    Tensor t = params_.value(idx);
    std::vector<float> v(t.numel());
    for (auto& x : v) x = float(dist(gen));
    t.copy_from(Tensor::from_vector(v, t.shape()));
  };
  input_->init_parameters(gen);
  double bound = 1.0 / std::sqrt(double(config_.width()));
  fill(predictor_w_, std::uniform_real_distribution<double>(-bound, bound));
  fill(predictor_b_, std::uniform_real_distribution<double>(-bound, bound));
}

namespace {
// The batch's targets as the head reads them, over each row's scored
// positions: a span, or a padded row's real ones.
HeadTargets head_targets(const SequenceBatch& batch) {
  const int64_t B = batch.rows, L = batch.length;
  const bool padded = !batch.lengths.empty();
  HeadTargets t;
  if (!batch.targets.empty()) t.positions = Tensor::from_vector(batch.targets, {int64_t(batch.targets.size())});
  t.labels = batch.labels;
  if (batch.first.empty() && !padded) return t;
  t.first = batch.first.empty() ? std::vector<int64_t>(B, 0) : batch.first;
  t.last = batch.last.empty() ? std::vector<int64_t>(batch.lengths.begin(), batch.lengths.end()) : batch.last;
  check(int64_t(t.first.size()) == B && int64_t(t.last.size()) == B, "batch counts need a range per row");
  for (int64_t r = 0; r < B; ++r) {
    const int64_t end = padded ? batch.lengths[r] : L;
    check(0 <= t.first[r] && t.first[r] <= t.last[r] && t.last[r] <= end && end <= L,
          "batch row " + std::to_string(r) + " counts positions outside its 0.." + std::to_string(end));
  }
  return t;
}
}  // namespace

Tensor SequenceModel::run(const SequenceBatch& batch, const ForwardOptions& options, ForwardPass& pass) {
  const int64_t B = batch.rows, L = batch.length, P = config_.head.width(), F = config_.input_features;
  const bool padded = !batch.lengths.empty();
  if (F > 0) {
    check(int64_t(batch.features.size()) == B * L * F, "batch features: " + std::to_string(batch.features.size()) +
                                                           " floats for " + std::to_string(B) + " x " +
                                                           std::to_string(L) + " frames of " + std::to_string(F));
  } else {
    check(int64_t(batch.inputs.size()) == B * L,
          "batch inputs: " + std::to_string(batch.inputs.size()) + " for " + std::to_string(B) + " x " + std::to_string(L));
    for (int32_t id : batch.inputs)
      check(id >= 0 && id < config_.vocabulary, "input token " + std::to_string(id) + " outside 0.." +
                                                    std::to_string(config_.vocabulary - 1));
  }
  if (!pass.buf_) pass.buf_ = std::make_unique<ForwardPass::Buffers>();
  ForwardPass::Buffers& p = *pass.buf_;
  if (p.model != this) {  // a new pass, or another model's: planned anew
    p = ForwardPass::Buffers();
    p.model = this;
    p.encoder = encoder_->new_pass();
  }
  const Device dev = device_;
  p.counted = 0;  // until the loss is known: a failed forward leaves nothing to differentiate
  p.rows = B, p.length = L;
  p.v_ids = F > 0 ? grown_view(p.ids, {B, L, F}, dev) : grown_view(p.ids, {B, L}, dev, DType::i32);
  p.v_x = grown_view(p.x, {B, L, input_->width()}, dev);
  p.v_y = grown_view(p.y, {B, L, config_.width()}, dev);
  p.v_head = grown_view(p.head, {B * L, P}, dev);
  if (F > 0)
    p.v_ids.copy_from(Tensor::from_vector(batch.features, {B, L, F}));
  else
    p.v_ids.copy_from(Tensor::from_vector(batch.inputs, {B, L}));
  input_->forward(p.v_ids, 0, p.v_x);
  encoder_->forward(p.v_x, padded ? Tensor::from_vector(batch.lengths, {B}) : Tensor(), p.v_y, options, *p.encoder);
  Tensor head3 = p.v_head.reshape({B, L, P});
  linear_forward(p.v_y, params_.value(predictor_w_), params_.value(predictor_b_), head3, options.precision.head);
  p.head_products = options.precision.head;
  return head3;
}

namespace {
void check_batch_shape(const SequenceModelConfig& c, const SequenceBatch& batch) {
  check(batch.rows >= 1 && batch.length >= 1 && batch.length <= c.max_positions,
        "a batch of " + std::to_string(batch.rows) + " x " + std::to_string(batch.length) +
            " positions does not fit a model of " + std::to_string(c.max_positions) + " positions");
  check(batch.lengths.empty() || int64_t(batch.lengths.size()) == batch.rows, "batch lengths need one per row");
}
}  // namespace

Tensor SequenceModel::predict(const SequenceBatch& batch, const ForwardOptions& options) {
  check_batch_shape(config_, batch);
  ForwardOptions eval = options;
  eval.train = false;
  return run(batch, eval, own_pass_);  // its count stays 0: no loss to differentiate
}

double SequenceModel::forward(const SequenceBatch& batch, const ForwardOptions& options, ForwardPass& pass,
                              Tensor* nll, double* accuracy) {
  check_batch_shape(config_, batch);
  HeadTargets targets = head_targets(batch);
  const int64_t counted = config_.head.counted(targets, batch.rows, batch.length);
  check(counted > 0, "a batch that counts no positions");
  const Tensor head3 = run(batch, options, pass);
  ForwardPass::Buffers& p = *pass.buf_;
  p.targets = std::move(targets);
  const double loss = config_.head.loss_forward(head3, p.targets, p.loss, nll, accuracy);
  p.counted = counted;
  return loss;
}

double SequenceModel::forward(const SequenceBatch& batch, const ForwardOptions& options, Tensor* nll,
                              double* accuracy) {
  return forward(batch, options, own_pass_, nll, accuracy);
}

int64_t SequenceModel::counted(const SequenceBatch& batch) const {
  check_batch_shape(config_, batch);
  return config_.head.counted(head_targets(batch), batch.rows, batch.length);
}

void SequenceModel::backward(ForwardPass& pass, int64_t normalizer) {
  check(pass.buf_ && pass.buf_->model == this && pass.buf_->counted > 0,
        "backward of a pass that no forward of this model filled with a loss");
  ForwardPass::Buffers& p = *pass.buf_;
  check(normalizer == 0 || normalizer >= p.counted, "backward: a batch's count cannot be below its part's");
  const int64_t B = p.rows, L = p.length, d = config_.width(), P = config_.head.width();
  const float scale = 1.f / float(normalizer > 0 ? normalizer : p.counted);
  Buffers& s = *buf_;
  Tensor dhead = grown_view(s.dhead, {B * L, P}, device_), dy = grown_view(s.dy, {B, L, d}, device_),
         dx = grown_view(s.dx, {B, L, input_->width()}, device_);
  Tensor dhead3 = dhead.reshape({B, L, P});
  config_.head.loss_backward(p.v_head.reshape({B, L, P}), p.targets, scale, p.loss, dhead3);
  Tensor dW = params_.grad(predictor_w_), db = params_.grad(predictor_b_);
  Tensor dy2 = dy.reshape({B * L, d});
  linear_backward(p.v_y.reshape({B * L, d}), params_.value(predictor_w_), dhead, dy2, dW, db, p.head_products);
  encoder_->backward(*p.encoder, dy, dx);
  input_->backward(p.v_ids, dx);
}

TransformerStack& SequenceModel::recurrent_form(const char* what) const {
  if (!stack_)
    throw Error(std::string(what) + ": a " + config_.encoder_name() +
                " model has no recurrent form (its backward direction starts at the end of the input): run it over "
                "whole inputs");
  return *stack_;
}

int64_t SequenceModel::state_numel(int64_t batch, DType dtype) const {
  return recurrent_form("state_numel").state_numel(batch, config_.max_positions, dtype);
}

RecurrentState SequenceModel::new_state(int64_t batch, DType dtype, bool zeroed) const {
  return recurrent_form("new_state").new_state(batch, config_.max_positions, dtype, zeroed);
}

void SequenceModel::prepare_step(const Precision& precision, bool pack_weights) {
  precision.check_runs_on(device_);
  recurrent_form("prepare_step").prepare_step(precision.products, pack_weights);
  step_precision_ = precision;
  // The head's product packed too where that pays: each row then comes out
  // the same at any batch, which a pool's rows need (OpenBLAS picks other
  // kernels, and other sums, for other row counts).
  const bool pack = pack_weights && StepLinear::packing_pays(device_, precision.head);
  buf_->predictor.prepare(params_.value(predictor_w_), precision.head, pack);
  input_->prepare_step(pack_weights);
}

namespace {
// [B] tokens or [B, F] frames for step(); [B, T] tokens or [B, T, F] frames for chunks.
void check_inputs(const SequenceModelConfig& c, const Tensor& inputs, bool chunk, const char* what) {
  const int64_t F = c.input_features;
  const int64_t rank = (chunk ? 2 : 1) + (F > 0 ? 1 : 0);
  const bool ok = inputs.defined() && inputs.ndim() == rank && inputs.dim(0) >= 1 &&
                  (F > 0 ? inputs.dtype() == DType::f32 && inputs.dim(-1) == F : inputs.dtype() == DType::i32) &&
                  (!chunk || inputs.dim(1) >= 1);
  if (ok) return;
  const std::string want = F > 0 ? std::string("float [B") + (chunk ? ", T" : "") + ", " + std::to_string(F) + "]"
                                 : std::string("int32 [B") + (chunk ? ", T" : "") + "]";
  throw Error(std::string(what) + " inputs must be " + want + ", got " + shape_str(inputs.shape()));
}
}  // namespace

void SequenceModel::step(RecurrentState& state, const Tensor& inputs, Tensor& head) {
  TransformerStack& stack = recurrent_form("step");
  const int64_t d = config_.transformer.d_model, t = state.position;
  check_inputs(config_, inputs, false, "step");
  if (t < 0 || (config_.input_features == 0 && t >= config_.max_positions))
    throw Error("step position " + std::to_string(t) + " outside 0.." + std::to_string(config_.max_positions - 1));
  const int64_t B = inputs.dim(0);
  check_shape(head, {B, config_.head.width()}, "step head");
  Buffers& b = *buf_;
  if (b.step_B != B) {
    b.step_B = B;
    b.step_x = Tensor::empty({B, 1, d}, device_);
    b.step_y = Tensor::empty({B, d}, device_);
  }
  input_->forward(inputs, t, b.step_x);
  stack.step(state, b.step_x.reshape({B, d}), b.step_y);
  predict_step(b.step_y, head);
}

void SequenceModel::predict_step(const Tensor& y, Tensor& head, Tensor* scratch) {
  if (buf_->predictor.W.defined() || buf_->predictor.packed.out() > 0)
    buf_->predictor.forward(y, params_.value(predictor_b_), head, false, scratch);
  else
    linear_forward(y, params_.value(predictor_w_), params_.value(predictor_b_), head, step_precision_.head);
}

void SequenceModel::step_rows(RecurrentState& state, const int64_t* rows, const int64_t* positions,
                              const Tensor& inputs, Tensor& head, int slot) {
  TransformerStack& stack = recurrent_form("step_rows");
  const int64_t d = config_.transformer.d_model;
  check_inputs(config_, inputs, false, "step");
  const int64_t B = inputs.dim(0);
  check_shape(head, {B, config_.head.width()}, "step head");
  Buffers& b = *buf_;
  if (slot < 0 || slot >= kStepSlots) throw Error("step slot " + std::to_string(slot) + " outside 0.." + std::to_string(kStepSlots - 1));
  Tensor x = grown_view(b.rows_x[size_t(slot)], {B, 1, d}, device_), y = grown_view(b.rows_y[size_t(slot)], {B, d}, device_);
  input_->forward_at(inputs, positions, x, slot);
  stack.step_rows(state, rows, x.reshape({B, d}), y, slot);
  predict_step(y, head, &b.rows_rounded[size_t(slot)]);
}

void SequenceModel::reserve_step_rows(int slots, int64_t rows) {
  recurrent_form("reserve_step_rows").reserve_step_rows(slots, rows, device_);  // checks slots and rows
  const int64_t d = config_.transformer.d_model;
  Buffers& b = *buf_;
  const int64_t rounded = b.predictor.W.defined() ? 0 : b.predictor.packed.scratch_numel(rows);
  for (int s = 0; s < slots; ++s) {
    grown_view(b.rows_x[size_t(s)], {rows, 1, d}, device_);
    grown_view(b.rows_y[size_t(s)], {rows, d}, device_);
    if (rounded > 0) grown_view(b.rows_rounded[size_t(s)], {rounded}, Device::cpu, DType::i32);
  }
  input_->reserve_at(slots, rows);
}

void SequenceModel::reset_state_element(RecurrentState& state, int64_t row) const {
  recurrent_form("reset_state_element").reset_state_element(state, row);
}

void SequenceModel::continue_chunk(RecurrentState& state, const Tensor& inputs, Tensor& heads) {
  TransformerStack& stack = recurrent_form("continue_chunk");
  const int64_t d = config_.transformer.d_model, P = config_.head.width(), t0 = state.position;
  check_inputs(config_, inputs, true, "chunk");
  check(t0 >= 0 && (config_.input_features > 0 || t0 + inputs.dim(1) <= config_.max_positions),
        "a chunk at positions " + std::to_string(t0) + ".." + std::to_string(t0 + inputs.dim(1) - 1) +
            " outside 0.." + std::to_string(config_.max_positions - 1));
  const int64_t B = inputs.dim(0), T = inputs.dim(1);
  check_shape(heads, {B, T, P}, "chunk heads");
  // Grown, never shrunk: a stream of chunks allocates nothing after its largest.
  Tensor x = grown_view(buf_->chunk_x, {B, T, d}, device_), y = grown_view(buf_->chunk_y, {B, T, d}, device_);
  input_->forward(inputs, t0, x);
  stack.continue_chunk(state, x, y);
  linear_forward(y, params_.value(predictor_w_), params_.value(predictor_b_), heads, step_precision_.head);
}

void SequenceModel::prefill(const Tensor& inputs, RecurrentState& state, Tensor& head) {
  check_inputs(config_, inputs, true, "prefill");
  const int64_t B = inputs.dim(0), T = inputs.dim(1), P = config_.head.width();
  check_shape(head, {B, P}, "prefill head");
  Tensor heads = Tensor::empty({B, T, P}, device_);
  state.reset();
  continue_chunk(state, inputs, heads);
  // The last position's head predicts what follows the prefix.
  Tensor rows = heads.reshape({B * T, P});
  for (int64_t i = 0; i < B; ++i) head.rows(i, i + 1).copy_from(rows.rows(i * T + T - 1, i * T + T));
}

void SequenceModel::copy_state_element(const RecurrentState& from, int64_t src, RecurrentState& to,
                                       int64_t dst) const {
  recurrent_form("copy_state_element").copy_state_element(from, src, to, dst);
}

}  // namespace lt
