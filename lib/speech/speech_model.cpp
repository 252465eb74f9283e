// The speech model's front end and its checkpoint entries.
#include "speech/speech_model.h"

#include <cstdio>

#include "audio/audio_file.h"
#include "common/error.h"

namespace lt {

SpeechFrontEnd::SpeechFrontEnd(const FbankConfig& fbank, const FrameWindow& window)
    : fbank_(std::make_shared<const Fbank>(fbank)), window_(window) {
  window_.validate();
}

void SpeechFrontEnd::set_statistics(const FeatureStats& stats) {
  check(stats.bins == fbank_->config().bins && stats.count > 0,
        "feature statistics of " + std::to_string(stats.count) + " frames of " + std::to_string(stats.bins) +
            " bins do not fit a " + std::to_string(fbank_->config().bins) + "-bin filterbank");
  mean_ = stats.mean();
  inv_std_ = stats.inv_std();
}

std::vector<float> SpeechFrontEnd::filterbank(const std::vector<float>& samples) const {
  std::vector<float> out(size_t(fbank_->frames(int64_t(samples.size())) * fbank_->config().bins));
  fbank_->compute(samples.data(), int64_t(samples.size()), out.data());
  return out;
}

void SpeechFrontEnd::normalize(float* frames, int64_t n) const {
  check(has_statistics(), "the speech front end has no normalisation statistics");
  normalize_features(frames, n, fbank_->config().bins, mean_.data(), inv_std_.data());
}

void SpeechFrontEnd::warp_normalized(float* frames, int64_t n, double alpha) const {
  check(has_statistics(), "the speech front end has no normalisation statistics");
  const int bins = fbank_->config().bins;
  for (int64_t i = 0; i < n * bins; ++i) frames[i] = frames[i] / inv_std_[size_t(i % bins)] + mean_[size_t(i % bins)];
  MelWarp(fbank_->config(), alpha).apply(frames, n);
  normalize(frames, n);
}

std::vector<float> SpeechFrontEnd::encoder_inputs(const std::vector<float>& raw, const FrameWindow& window) const {
  const int bins = fbank_->config().bins;
  const int64_t n = int64_t(raw.size()) / bins;
  std::vector<float> normalised = raw;
  normalize(normalised.data(), n);
  std::vector<float> out(size_t(window.positions(n) * bins * window.frames()));
  window_frames(normalised.data(), 0, n, n - 1, bins, window, 0, window.positions(n), out.data());
  return out;
}

std::map<std::string, std::string> SpeechFrontEnd::metadata() const {
  const FbankConfig& c = fbank_->config();
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  return {{"fbank.sample_rate", std::to_string(c.sample_rate)},
          {"fbank.bins", std::to_string(c.bins)},
          {"fbank.frame_ms", num(c.frame_ms)},
          {"fbank.hop_ms", num(c.hop_ms)},
          {"fbank.preemphasis", num(c.preemphasis)},
          {"fbank.low_hz", num(c.low_hz)},
          {"fbank.high_hz", num(c.high_hz)},
          {"fbank.log_floor", num(c.log_floor)},
          {"fbank.remove_dc", c.remove_dc ? "1" : "0"},
          {"frame_stack", std::to_string(window_.stack)},
          {"frame_past", std::to_string(window_.past)},
          {"frame_future", std::to_string(window_.future)}};
}

std::map<std::string, Tensor> SpeechFrontEnd::tensors() const {
  check(has_statistics(), "the speech front end has no normalisation statistics to save");
  const int64_t bins = fbank_->config().bins;
  return {{"frontend.mean", Tensor::from_vector(mean_, {bins})},
          {"frontend.inv_std", Tensor::from_vector(inv_std_, {bins})}};
}

SpeechFrontEnd SpeechFrontEnd::from_checkpoint(const Checkpoint& ck) {
  // Checked as read, before they are narrowed to int.
  const int64_t rate = ck.meta_int("fbank.sample_rate"), bins = ck.meta_int("fbank.bins");
  check(rate == kSpeechSampleRate && bins >= 1 && bins <= 512,
        ck.path + ": metadata fbank.sample_rate " + std::to_string(rate) + " / fbank.bins " + std::to_string(bins) +
            " (lt reads 16 kHz, 1..512 bins)");
  FbankConfig c;
  c.sample_rate = int(rate);
  c.bins = int(bins);
  c.frame_ms = ck.meta_double("fbank.frame_ms");
  c.hop_ms = ck.meta_double("fbank.hop_ms");
  c.preemphasis = ck.meta_double("fbank.preemphasis");
  c.low_hz = ck.meta_double("fbank.low_hz");
  c.high_hz = ck.meta_double("fbank.high_hz");
  c.log_floor = ck.meta_double("fbank.log_floor");
  c.remove_dc = ck.meta_int("fbank.remove_dc") != 0;
  // Files from before context frames have no frame_past or frame_future.
  auto frames = [&](const char* key) { return ck.metadata.count(key) ? ck.meta_int(key) : 0; };
  const int64_t stack = ck.meta_int("frame_stack"), past = frames("frame_past"), future = frames("frame_future");
  check(stack >= 1 && stack <= 16 && past >= 0 && past <= 64 && future >= 0 && future <= 64,
        ck.path + ": metadata frame_stack " + std::to_string(stack) + ", frame_past " + std::to_string(past) +
            ", frame_future " + std::to_string(future) + " (lt reads stacks of 1..16, context of 0..64)");
  const FrameWindow w{int(stack), int(past), int(future)};
  SpeechFrontEnd f;
  try {
    f = SpeechFrontEnd(c, w);
  } catch (const Error& e) {
    throw Error(ck.path + ": " + e.what());
  }
  f.mean_ = ck.get("frontend.mean", {c.bins}).to_vector();
  f.inv_std_ = ck.get("frontend.inv_std", {c.bins}).to_vector();
  return f;
}

namespace {
SequenceModelConfig speech_config(int64_t features, int64_t classes, int64_t max_positions) {
  SequenceModelConfig c;
  c.family = "speech";
  c.input_features = features;
  c.max_positions = max_positions;
  c.head.kind = HeadKind::ctc;
  c.head.classes = classes;
  return c;
}
}  // namespace

SequenceModelConfig speech_model_config(const TransformerConfig& transformer, int64_t features, int64_t classes,
                                        int64_t max_positions) {
  SequenceModelConfig c = speech_config(features, classes, max_positions);
  c.transformer = transformer;
  c.validate();
  return c;
}

SequenceModelConfig speech_model_config(const LstmConfig& lstm, int64_t features, int64_t classes,
                                        int64_t max_positions) {
  SequenceModelConfig c = speech_config(features, classes, max_positions);
  c.encoder = EncoderKind::bilstm;
  c.lstm = lstm;
  c.validate();
  return c;
}

SpeechModel load_speech_model(const std::string& path, Device device) {
  const Checkpoint ck = load_safetensors(path);
  check(ck.meta("lt.model", "image") == "speech",
        path + ": " + with_article(ck.meta("lt.model", "image")) + " model, not a speech model (lt.model=speech)");
  SpeechModel m{SequenceModel::load(ck, device), SpeechFrontEnd::from_checkpoint(ck)};
  check(m.model->config().input_features == m.frontend.features() && !m.model->config().head.per_position(),
        path + ": its encoder takes " + std::to_string(m.model->config().input_features) +
            " features, its front end gives " + std::to_string(m.frontend.features()));
  return m;
}

}  // namespace lt
