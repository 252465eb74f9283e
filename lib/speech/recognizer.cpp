// Whole recordings to phones: front end; the encoder, a causal one restarted
// in pauses, any other over the stretches between pauses in windows of the
// model's length; CTC decoding.
#include "speech/recognizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/error.h"
#include "core/clock.h"
#include "speech/causal_encoder.h"
#include "speech/decoding.h"
#include "speech/pause_finder.h"

namespace lt {

namespace {
// Window starts covering 0..positions-1: every half window, the last one
// flush with the end.
std::vector<int64_t> window_starts(int64_t positions, int64_t window) {
  std::vector<int64_t> starts;
  const int64_t hop = std::max<int64_t>(1, window / 2);
  for (int64_t s = 0;; s += hop) {
    if (s + window >= positions) {
      starts.push_back(std::max<int64_t>(0, positions - window));
      break;
    }
    starts.push_back(s);
  }
  return starts;
}
}  // namespace

double position_start_seconds(const SpeechFrontEnd& f, int64_t position) {
  return double(position) * f.stack() * f.fbank_config().hop_ms / 1000.0;
}

int64_t positions_in(const SpeechFrontEnd& f, double seconds) {
  check(seconds >= 0 && std::isfinite(seconds), "a duration must be >= 0 seconds, is " + std::to_string(seconds));
  return seconds == 0 ? 0 : std::max<int64_t>(1, std::llround(seconds / position_start_seconds(f, 1)));
}

int64_t delay_positions(const SpeechFrontEnd& f, double seconds) {
  check(seconds >= 0 && std::isfinite(seconds), "a delay must be >= 0 seconds, is " + std::to_string(seconds));
  const FbankConfig& fb = f.fbank_config();
  const double lookahead = (fb.frame_ms - fb.hop_ms + f.window().future * fb.hop_ms) / 1000.0;
  // A hair of slack, so that a delay of exactly k positions and the look-ahead is k.
  return std::max<int64_t>(0, int64_t(std::floor((seconds - lookahead) / position_start_seconds(f, 1) + 1e-9)));
}

SpeechRecognizer::SpeechRecognizer(SpeechModel& model, const RecognizerOptions& options)
    : model_(model), options_(options) {
  check(model.model->config().family == "speech", "a speech recognizer needs a speech model");
  // Only a causal-linear model runs as an RNN (CausalEncoder); the others,
  // a Bi-LSTM among them, see whole windows and have no step to prepare.
  if (model.model->config().runs_as_rnn()) model.model->prepare_step(options.precision, false);
  else options.precision.check_runs_on(model.model->device());
  // Made now so that bad options, a lexicon or language model that cannot
  // work together, are refused before the first recording.
  decoding_ = std::make_unique<speech::Decoding>(model.model->config().head.width(), options);
  positions_in(model.frontend, options.pause_seconds);  // refuses a bad pause now
}

SpeechRecognizer::~SpeechRecognizer() = default;

std::vector<float> SpeechRecognizer::logits(const std::vector<float>& inputs, int64_t positions) {
  SequenceModel& m = *model_.model;
  const int64_t F = m.config().input_features, C = m.config().head.width();
  check(positions >= 1 && int64_t(inputs.size()) == positions * F,
        "recognizer: " + std::to_string(inputs.size()) + " input floats for " + std::to_string(positions) +
            " positions of " + std::to_string(F));
  std::vector<float> out(size_t(positions * C));
  const int64_t pause = positions_in(model_.frontend, options_.pause_seconds);
  if (m.config().runs_as_rnn()) {
    speech::CausalEncoder(m, options_.precision, pause).encode(inputs.data(), positions, out.data());
    return out;
  }
  // A model that sees both sides finds the pauses in a first pass over the
  // whole recording, then encodes each stretch between them on its own.
  windowed(inputs.data(), positions, out.data());
  if (pause == 0) return out;
  std::vector<int64_t> ends;  // of each stretch, the position after its pause
  speech::PauseFinder pauses(pause);
  for (int64_t p = 0; p < positions; ++p)
    if (pauses.ends_pause(out.data() + p * C, C)) ends.push_back(p + 1);
  if (ends.empty() || ends.back() != positions) ends.push_back(positions);
  if (ends.size() == 1) return out;
  for (size_t i = 0, start = 0; i < ends.size(); start = size_t(ends[i++]))
    windowed(inputs.data() + start * size_t(F), ends[i] - int64_t(start), out.data() + start * size_t(C));
  return out;
}

void SpeechRecognizer::windowed(const float* inputs, int64_t positions, float* out) {
  SequenceModel& m = *model_.model;
  const int64_t F = m.config().input_features, C = m.config().head.width(), W = m.config().max_positions;
  ForwardOptions eval;
  eval.precision = options_.precision;
  const std::vector<int64_t> starts = window_starts(positions, W);
  const int64_t T = std::min(W, positions);
  for (size_t w = 0; w < starts.size(); ++w) {
    const int64_t s = starts[w];
    batch_.rows = 1;
    batch_.length = T;
    batch_.features.assign(inputs + s * F, inputs + (s + T) * F);
    const std::vector<float> h = m.predict(batch_, eval).to_vector();
    // The positions this window is deepest inside: halfway to each neighbour's.
    const int64_t from = w == 0 ? 0 : (starts[w - 1] + T + s) / 2;
    const int64_t to = w + 1 == starts.size() ? positions : (s + T + starts[w + 1]) / 2;
    std::copy(h.begin() + (from - s) * C, h.begin() + (to - s) * C, out + from * C);
  }
}

Transcript SpeechRecognizer::transcribe(const std::vector<float>& samples) {
  const SpeechFrontEnd& f = model_.frontend;
  Transcript t;
  t.duration = double(samples.size()) / f.fbank_config().sample_rate;
  auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> raw = f.filterbank(samples);
  t.positions = f.positions(int64_t(raw.size()) / f.fbank_config().bins);
  check(t.positions >= 1, "recognizer: audio shorter than one analysis frame");
  const std::vector<float> inputs = f.encoder_inputs(raw);
  t.times.frontend = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const std::vector<float> l = logits(inputs, t.positions);
  t.times.encoder = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const int64_t C = model_.model->config().head.width();
  decoding_->reset();
  for (int64_t p = 0; p < t.positions; ++p) decoding_->push(l.data() + p * C);
  decoding_->finish();
  decoding_->take_settled(t.phones, &t.words);
  t.times.decoder = seconds_since(t0);
  return t;
}

}  // namespace lt
