// Streaming recognition: samples -> filterbank frames as they complete ->
// normalised -> each position's window of frames once its last frame (its
// future context included) is there -> the causal linear encoder continuing its
// state over each push's positions (SequenceModel::continue_chunk, eq. 18-20;
// afresh after pauses, speech/causal_encoder.h) -> the CTC decoder frame by
// frame. Buffers grow to the largest push and are reused, so a stream of any
// length runs in constant memory.
#include <algorithm>
#include <chrono>

#include "core/clock.h"
#include "lt/error.h"
#include "lt/recognizer.h"
#include "speech/causal_encoder.h"
#include "speech/decoding.h"

namespace lt {

namespace {
// Positions per decoding round: a long push is cut so the buffers stay small.
constexpr int64_t kChunk = 256;
}  // namespace

SpeechStream::SpeechStream(SpeechModel& model, const RecognizerOptions& options) : model_(model) {
  const SequenceModelConfig& c = model.model->config();
  check(c.family == "speech", "streaming recognition needs a speech model");
  check(c.runs_as_rnn(), "streaming needs a causal-linear model (its state has a fixed size); this one is " +
                            c.encoder_name() + ": transcribe whole files instead");
  model.model->prepare_step(options.precision, false);
  fbank_ = std::make_unique<FbankStream>(model.frontend.fbank());
  decoder_ = std::make_unique<speech::Decoding>(c.head.width(), options);
  encoder_ = std::make_unique<speech::CausalEncoder>(*model.model, options.precision,
                                                     positions_in(model.frontend, options.pause_seconds));
  head_rows_.resize(size_t(kChunk * c.head.width()));
  inputs_.resize(size_t(kChunk * model.frontend.features()));
}

SpeechStream::~SpeechStream() = default;

void SpeechStream::push(const float* samples, int64_t n) {
  check(!finished_, "SpeechStream: push after finish");
  samples_ += n;
  auto t0 = std::chrono::steady_clock::now();
  raw_.clear();
  fbank_->push(samples, n, raw_);
  const int64_t bins = model_.frontend.fbank_config().bins;
  model_.frontend.normalize(raw_.data(), int64_t(raw_.size()) / bins);
  frames_.insert(frames_.end(), raw_.begin(), raw_.end());
  times_.frontend += seconds_since(t0);
  // Position p is complete once frame p k + k - 1 + future has arrived.
  const FrameWindow& w = model_.frontend.window();
  const int64_t frames = first_ + int64_t(frames_.size()) / bins;
  if (frames > w.future) encode((frames - w.future) / w.stack, frames - 1);
}

void SpeechStream::finish() {
  if (finished_) return;
  // The last positions read past the end: the last frame repeats, as in window_frames.
  const int64_t frames = first_ + int64_t(frames_.size()) / model_.frontend.fbank_config().bins;
  encode(model_.frontend.positions(frames), frames - 1);
  auto t0 = std::chrono::steady_clock::now();
  decoder_->finish();
  times_.decoder += seconds_since(t0);
  finished_ = true;
}

void SpeechStream::encode(int64_t end, int64_t last) {
  const FrameWindow& w = model_.frontend.window();
  const int bins = model_.frontend.fbank_config().bins;
  const int64_t C = model_.model->config().head.width(), held = int64_t(frames_.size()) / bins;
  while (t_ < end) {
    const int64_t T = std::min(kChunk, end - t_);
    auto t0 = std::chrono::steady_clock::now();
    window_frames(frames_.data(), first_, held, last, bins, w, t_, T, inputs_.data());
    encoder_->encode(inputs_.data(), T, head_rows_.data());
    times_.encoder += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < T; ++i) decoder_->push(head_rows_.data() + i * C);
    times_.decoder += seconds_since(t0);
    t_ += T;
  }
  // Later positions read from frame t_ k - past on.
  const int64_t drop = std::clamp<int64_t>(t_ * w.stack - w.past - first_, 0, held);
  frames_.erase(frames_.begin(), frames_.begin() + drop * bins);
  first_ += drop;
}

void SpeechStream::take_settled(std::vector<CtcToken>& phones, std::vector<RecognizedWord>* words) {
  decoder_->take_settled(phones, words);
}

std::vector<CtcToken> SpeechStream::tentative() const { return decoder_->tentative_phones(); }

std::vector<RecognizedWord> SpeechStream::tentative_words() const { return decoder_->tentative_words(); }

}  // namespace lt
