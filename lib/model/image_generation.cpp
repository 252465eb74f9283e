// ImageGenerator: the sampling loop over ImageModel::step, with prefill and
// fork for completions, or over ImageModel::recompute_head for a model
// without a recurrent form.
#include "model/image_generation.h"

#include <algorithm>

#include "common/error.h"
#include "common/random.h"

namespace lt {

int64_t ImageConstraint::known_prefix() const {
  int64_t t = 0;
  while (t < int64_t(known.size()) && known[t]) ++t;
  return t;
}

ImageGenerator::ImageGenerator(ImageModel& model, int64_t batch, const Precision& precision, GenerationForm form)
    : model_(model), batch_(batch), precision_(precision), form_(form) {
  check(batch >= 1, "generation batch must be >= 1, got " + std::to_string(batch));
  const Device d = model.core().device();
  precision.check_runs_on(d);
  if (form_ == GenerationForm::automatic)
    form_ = model.config().transformer.has_recurrent_form() ? GenerationForm::recurrent : GenerationForm::recompute;
  if (form_ == GenerationForm::recurrent) state_ = model.core().new_state(batch, precision.state);
  head_ = Tensor::empty({batch, model.config().head_width()}, d);
  tokens_ = Tensor::empty({batch}, d, DType::i32);
  next_ = Tensor::empty({batch}, d, DType::i32);
  nll_ = Tensor::empty({batch}, d);
}

int32_t first_subpixel(const std::vector<double>& histogram, uint64_t seed, int64_t row) {
  double total = 0;
  for (double h : histogram) total += h;
  if (total <= 0) return 0;
  double u = sample_uniform(seed, -1, row, 0) * total, acc = 0;
  for (size_t v = 0; v < histogram.size(); ++v) {
    acc += histogram[v];
    if (u < acc) return int32_t(v);
  }
  return int32_t(histogram.size() - 1);
}

bool ImageGenerator::begin_recurrent(const ImageConstraint* c, int64_t start, const std::vector<uint8_t>& pixels) {
  const int64_t S = model_.config().subpixels();
  model_.core().prepare_step(precision_);  // the current weights: a model may have changed since the last call
  state_.reset();
  if (c && c->known_prefix() > 0) {
    // One parallel pass over the prefix for one image, then its state forked into every row.
    std::vector<int32_t> prefix(c->values.begin(), c->values.begin() + start);
    RecurrentState one_state = model_.core().new_state(1, precision_.state);
    Tensor one_head = Tensor::empty({1, model_.config().head_width()}, model_.core().device());
    model_.core().prefill(Tensor::from_vector(prefix, {1, start}, model_.core().device()), one_state, one_head);
    for (int64_t b = 0; b < batch_; ++b) {
      model_.core().copy_state_element(one_state, 0, state_, b);
      head_.rows(b, b + 1).copy_from(one_head);
    }
    return true;
  }
  std::vector<int32_t> first(batch_);
  for (int64_t b = 0; b < batch_; ++b) first[b] = pixels[b * S];
  tokens_.copy_from(Tensor::from_vector(first, {batch_}, model_.core().device()));
  return false;
}

void ImageGenerator::recompute(int64_t t, const std::vector<uint8_t>& pixels) {
  const int64_t S = model_.config().subpixels();
  prefix_.resize(batch_ * t);
  for (int64_t b = 0; b < batch_; ++b)
    std::copy(pixels.begin() + b * S, pixels.begin() + b * S + t, prefix_.begin() + b * t);
  model_.recompute_head(prefix_, batch_, head_, precision_);
}

void ImageGenerator::generate(uint64_t seed, std::vector<uint8_t>& pixels, const ImageConstraint* c,
                              const SubpixelCallback& on_subpixel, std::vector<double>* nll_nats) {
  const ImageModelConfig& cfg = model_.config();
  const int64_t S = cfg.subpixels(), B = batch_;
  if (c)
    check(int64_t(c->values.size()) == S && int64_t(c->known.size()) == S,
          "constraint has " + std::to_string(c->values.size()) + " subpixels, the model " + std::to_string(S));
  check(!(c && nll_nats), "log-likelihoods are reported for unconditional samples only");
  pixels.assign(B * S, 0);
  std::vector<int32_t> host(B);
  auto publish = [&](int64_t t, const std::vector<int32_t>& v) {
    for (int64_t b = 0; b < B; ++b) pixels[b * S + t] = uint8_t(v[b]);
    if (on_subpixel) on_subpixel(t, pixels);
  };
  if (nll_nats) nll_nats->assign(B * (S - 1), 0.0);

  // Decided before the loop: a constraint's known prefix, or the first subpixel.
  const int64_t known = c ? std::min(c->known_prefix(), S) : 0;
  for (int64_t t = 0; t < known; ++t) {
    host.assign(B, c->values[t]);
    publish(t, host);
  }
  if (known == 0) {
    for (int64_t b = 0; b < B; ++b) host[b] = first_subpixel(cfg.first_subpixel_histogram, seed, b);
    publish(0, host);
  }
  const int64_t start = std::max<int64_t>(known, 1);
  if (start == S) return;
  // Recurrent: tokens_ holds subpixel t-1 and the state everything before it,
  // unless a prefill has already written head_ for subpixel start.
  bool have_head = form_ == GenerationForm::recurrent && begin_recurrent(c, start, pixels);

  std::vector<float> nll;
  for (int64_t t = start; t < S; ++t) {
    if (form_ == GenerationForm::recompute)
      recompute(t, pixels);
    else if (!have_head)
      model_.core().step(state_, tokens_, head_);  // reads subpixel t-1, predicts subpixel t
    have_head = false;
    if (c && c->known[t]) {
      host.assign(B, c->values[t]);
      next_.copy_from(Tensor::from_vector(host, {B}, model_.core().device()));
    } else {
      model_.sample(head_, seed, t, next_);
      host = next_.to_vector_i32();
    }
    if (nll_nats) {
      model_.log_loss(head_, next_, nll_);
      nll = nll_.to_vector();
      for (int64_t b = 0; b < B; ++b) (*nll_nats)[b * (S - 1) + t - 1] = nll[b];
    }
    publish(t, host);
    std::swap(tokens_, next_);
  }
}

}  // namespace lt
