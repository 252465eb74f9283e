// Streaming recognition: samples -> filterbank frames as they complete ->
// normalised, stacked positions -> the causal linear encoder continuing its
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
  encode((int64_t(frames_.size()) / bins) / model_.frontend.stack());
}

void SpeechStream::finish() {
  if (finished_) return;
  // A last partial group repeats its last frame, as stack_frames does.
  const int64_t bins = model_.frontend.fbank_config().bins, k = model_.frontend.stack();
  const int64_t left = int64_t(frames_.size()) / bins;
  if (left > 0) {
    for (int64_t i = left; i < k; ++i) frames_.insert(frames_.end(), frames_.end() - bins, frames_.end());
    encode(1);
  }
  auto t0 = std::chrono::steady_clock::now();
  decoder_->finish();
  times_.decoder += seconds_since(t0);
  finished_ = true;
}

// Stacks `positions` whole groups of frames_ into encoder inputs and runs
// them through the encoder and the decoder.
void SpeechStream::encode(int64_t positions) {
  const int64_t bins = model_.frontend.fbank_config().bins, k = model_.frontend.stack();
  const int64_t C = model_.model->config().head.width();
  int64_t used = 0;
  while (used < positions) {
    const int64_t T = std::min(kChunk, positions - used);
    auto t0 = std::chrono::steady_clock::now();
    // Stacking k frames side by side is their concatenation: the frames are
    // already in the encoder's layout.
    encoder_->encode(frames_.data() + used * k * bins, T, head_rows_.data());
    times_.encoder += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < T; ++i) decoder_->push(head_rows_.data() + i * C);
    times_.decoder += seconds_since(t0);
    t_ += T;
    used += T;
  }
  frames_.erase(frames_.begin(), frames_.begin() + positions * k * bins);
}

void SpeechStream::take_settled(std::vector<CtcToken>& phones, std::vector<RecognizedWord>* words) {
  decoder_->take_settled(phones, words);
}

std::vector<CtcToken> SpeechStream::tentative() const { return decoder_->tentative_phones(); }

std::vector<RecognizedWord> SpeechStream::tentative_words() const { return decoder_->tentative_words(); }

}  // namespace lt
