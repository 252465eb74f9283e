// ImageModel: embedding + position code + TransformerStack + output head.
#include "lt/image_model.h"

#include <cmath>
#include <random>

#include "lt/heads.h"
#include "lt/ops.h"
#include "lt/safetensors.h"

namespace lt {

struct ImageModel::Buffers {
  int64_t B = 0;                      // training/eval batch the buffers below are planned for
  Tensor inputs, targets;             // int32 [B, L], [B * L]
  Tensor emb, x, y, head, nll;        // [B, L, d/2], [B, L, d] x2, [B*L, P], [B*L]
  Tensor dhead, dy, dx, demb;
  int64_t step_B = 0;                 // generation batch
  Tensor step_emb, step_x, step_y;    // [B, 1, d/2], [B, 1, d], [B, d]
};

void ImageModelConfig::validate() const {
  check(height >= 1 && width >= 1 && (channels == 1 || channels == 3),
        "image must be at least 1x1 with 1 or 3 channels, got " + std::to_string(height) + "x" +
            std::to_string(width) + "x" + std::to_string(channels));
  check(subpixels() >= 2, "an image model needs at least 2 subpixels");
  check(mixtures >= 1, "mixtures must be >= 1");
  check(first_subpixel_histogram.empty() || first_subpixel_histogram.size() == 256,
        "first_subpixel_histogram needs 256 counts or none");
  transformer.validate();
  check(transformer.d_model % 4 == 0, "d_model " + std::to_string(transformer.d_model) +
                                          " must be a multiple of 4 (embedding and position code are d/2 each, "
                                          "the position code needs an even width)");
}

ImageModelConfig ImageModelConfig::preset(const std::string& name) {
  ImageModelConfig c;
  c.transformer.heads = 8;
  c.transformer.head_dim = 32;
  c.transformer.d_model = 256;
  c.transformer.ff_dim = 1024;
  if (name == "mnist") {
    c.transformer.layers = 8;
  } else if (name == "cifar10") {
    c.height = c.width = 32;
    c.channels = 3;
    c.transformer.layers = 16;
  } else {
    throw Error("unknown image model preset '" + name + "' (expected mnist or cifar10)");
  }
  return c;
}

ImageModel::ImageModel(const ImageModelConfig& config, Device device)
    : config_(config), device_(device), buf_(std::make_unique<Buffers>()) {
  config_.validate();
  require_device(device);
  const int64_t d = config_.transformer.d_model;
  embedding_ = params_.add("value_embedding.weight", {256, d / 2});
  stack_ = std::make_unique<TransformerStack>(config_.transformer, params_, "transformer.");
  predictor_w_ = params_.add("predictor.weight", {config_.head_width(), d});
  predictor_b_ = params_.add("predictor.bias", {config_.head_width()});
  params_.allocate(device);
  pe_ = Tensor::empty({config_.sequence_length(), d / 2}, device);
  position_code(0, pe_);
}

ImageModel::~ImageModel() = default;

void ImageModel::set_dropout(float p) {
  stack_->set_dropout(p);
  config_.transformer.dropout = p;
}

void ImageModel::init_parameters(uint64_t seed) {
  stack_->init_parameters(seed);
  std::mt19937_64 gen(seed ^ 0x5DEECE66Dull);
  auto fill = [&](size_t idx, auto dist) {
    Tensor t = params_.value(idx);
    std::vector<float> v(t.numel());
    for (auto& x : v) x = float(dist(gen));
    t.copy_from(Tensor::from_vector(v, t.shape()));
  };
  fill(embedding_, std::normal_distribution<double>(0, 1));  // torch.nn.Embedding's default
  double bound = 1.0 / std::sqrt(double(config_.transformer.d_model));
  fill(predictor_w_, std::uniform_real_distribution<double>(-bound, bound));
  fill(predictor_b_, std::uniform_real_distribution<double>(-bound, bound));
}

void ImageModel::embed(const Tensor& tokens, int64_t offset, Tensor& x) {
  Buffers& b = *buf_;
  Tensor& emb = tokens.ndim() == 1 ? b.step_emb : b.emb;
  Shape ids_by_channel = tokens.shape();
  ids_by_channel.push_back(emb.dim(2));
  Tensor rows = emb.reshape(ids_by_channel);
  embedding_forward(tokens, params_.value(embedding_), rows);
  concat_position_forward(emb, pe_.rows(offset, offset + emb.dim(1)), x);
}

double ImageModel::forward(const Tensor& images, bool train, uint64_t seed, Tensor* nll) {
  const int64_t S = config_.subpixels(), L = config_.sequence_length(), d = config_.transformer.d_model;
  check(images.ndim() == 2 && images.dim(1) == S && images.dtype() == DType::i32,
        "images must be int32 [B, " + std::to_string(S) + "] for a " + std::to_string(config_.height) + "x" +
            std::to_string(config_.width) + "x" + std::to_string(config_.channels) + " model, got " +
            shape_str(images.shape()));
  const int64_t B = images.dim(0);
  Buffers& b = *buf_;
  if (b.B != B) {
    b.B = B;
    b.inputs = Tensor::empty({B, L}, device_, DType::i32);
    b.targets = Tensor::empty({B * L}, device_, DType::i32);
    b.emb = Tensor::empty({B, L, d / 2}, device_);
    b.demb = Tensor::empty({B, L, d / 2}, device_);
    for (Tensor* t : {&b.x, &b.y, &b.dy, &b.dx}) *t = Tensor::empty({B, L, d}, device_);
    b.head = Tensor::empty({B * L, config_.head_width()}, device_);
    b.dhead = Tensor::empty({B * L, config_.head_width()}, device_);
    b.nll = Tensor::empty({B * L}, device_);
  }
  // inputs x[:, :-1], targets x[:, 1:]
  std::vector<int32_t> all = images.to_vector_i32(), in(B * L), out(B * L);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t t = 0; t < L; ++t) {
      int32_t v = all[i * S + t + 1];
      check(v >= 0 && v <= 255, "image bytes must be in 0..255, got " + std::to_string(v));
      in[i * L + t] = all[i * S + t];
      out[i * L + t] = v;
    }
  b.inputs.copy_from(Tensor::from_vector(in, {B, L}));
  b.targets.copy_from(Tensor::from_vector(out, {B * L}));

  embed(b.inputs, 0, b.x);
  stack_->forward(b.x, b.y, train, seed);
  Tensor head3 = b.head.reshape({B, L, config_.head_width()});
  linear_forward(b.y, params_.value(predictor_w_), params_.value(predictor_b_), head3, Products::fp32);
  double loss = config_.head == OutputHead::categorical ? categorical_loss_forward(b.head, b.targets, b.nll)
                                                        : mol_loss_forward(b.head, b.targets, b.nll);
  if (nll) nll->copy_from(b.nll);
  return loss;
}

void ImageModel::backward() {
  Buffers& b = *buf_;
  check(b.B > 0, "backward before forward");
  const float scale = 1.f / float(b.targets.numel());
  if (config_.head == OutputHead::categorical)
    categorical_loss_backward(b.head, b.targets, scale, b.dhead);
  else
    mol_loss_backward(b.head, b.targets, scale, b.dhead);
  Tensor dW = params_.grad(predictor_w_), db = params_.grad(predictor_b_);
  Tensor dy2 = b.dy.reshape({b.head.dim(0), config_.transformer.d_model});
  linear_backward(b.y.reshape({b.head.dim(0), config_.transformer.d_model}), params_.value(predictor_w_), b.dhead,
                  dy2, dW, db, Products::fp32);
  stack_->backward(b.dy, b.dx);
  concat_position_backward(b.dx, b.demb);
  Tensor dtable = params_.grad(embedding_);
  embedding_backward(b.inputs, b.demb, dtable);
}

int64_t ImageModel::state_numel(int64_t batch) const {
  return stack_->state_numel(batch, config_.sequence_length());
}

Tensor ImageModel::new_state(int64_t batch) const { return Tensor::zeros({state_numel(batch)}, device_); }

void ImageModel::step(Tensor& state, const Tensor& tokens, int64_t t, Tensor& head) {
  const int64_t L = config_.sequence_length(), d = config_.transformer.d_model;
  check(tokens.ndim() == 1 && tokens.dtype() == DType::i32, "step tokens must be int32 [B], got " + shape_str(tokens.shape()));
  check(t >= 0 && t < L, "step position " + std::to_string(t) + " outside 0.." + std::to_string(L - 1));
  const int64_t B = tokens.dim(0);
  check_shape(head, {B, config_.head_width()}, "step head");
  Buffers& b = *buf_;
  if (b.step_B != B) {
    b.step_B = B;
    b.step_emb = Tensor::empty({B, 1, d / 2}, device_);
    b.step_x = Tensor::empty({B, 1, d}, device_);
    b.step_y = Tensor::empty({B, d}, device_);
  }
  embed(tokens, t, b.step_x);
  stack_->step(state, L, b.step_x.reshape({B, d}), t, b.step_y);
  linear_forward(b.step_y, params_.value(predictor_w_), params_.value(predictor_b_), head, Products::fp32);
}

void ImageModel::set_step_precision(StepPrecision precision) { stack_->pack_step_weights(precision); }
StepPrecision ImageModel::step_precision() const { return stack_->step_precision(); }
void ImageModel::pack_step_weights() { stack_->pack_step_weights(stack_->step_precision()); }

void ImageModel::prefill(const Tensor& tokens, Tensor& state, Tensor& head) {
  const int64_t L = config_.sequence_length(), d = config_.transformer.d_model;
  check(tokens.ndim() == 2 && tokens.dtype() == DType::i32 && tokens.dim(1) >= 1 && tokens.dim(1) <= L,
        "prefill tokens must be int32 [B, T] with 1 <= T <= " + std::to_string(L) + ", got " + shape_str(tokens.shape()));
  const int64_t B = tokens.dim(0), T = tokens.dim(1);
  check_shape(head, {B, config_.head_width()}, "prefill head");
  Tensor emb = Tensor::empty({B, T, d / 2}, device_), x = Tensor::empty({B, T, d}, device_),
         y = Tensor::empty({B, T, d}, device_);
  embedding_forward(tokens, params_.value(embedding_), emb);
  concat_position_forward(emb, pe_.rows(0, T), x);
  stack_->prefill(x, y, state, L);
  // The last position's output predicts subpixel T.
  Tensor last = Tensor::empty({B, d}, device_);
  Tensor y2 = y.reshape({B * T, d});
  for (int64_t i = 0; i < B; ++i) last.rows(i, i + 1).copy_from(y2.rows(i * T + T - 1, i * T + T));
  linear_forward(last, params_.value(predictor_w_), params_.value(predictor_b_), head, Products::fp32);
}

void ImageModel::copy_state_element(const Tensor& src_state, int64_t src_batch, int64_t src, Tensor& dst_state,
                                    int64_t dst_batch, int64_t dst) const {
  stack_->copy_state_element(src_state, src_batch, src, dst_state, dst_batch, dst, config_.sequence_length());
}

void ImageModel::sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& bytes) const {
  if (config_.head == OutputHead::categorical)
    categorical_sample(head, seed, step, bytes);
  else
    mol_sample(head, seed, step, bytes);
}

void ImageModel::log_loss(const Tensor& head, const Tensor& bytes, Tensor& nll) const {
  if (config_.head == OutputHead::categorical)
    categorical_loss_forward(head, bytes, nll);
  else
    mol_loss_forward(head, bytes, nll);
}

}  // namespace lt
