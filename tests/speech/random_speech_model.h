// A random speech model that decodes to many labels, and speech-like test
// audio, for the recognizer's and lt-asr's tests.
#pragma once
#include <cmath>
#include <memory>
#include <vector>

#include "audio/fbank.h"
#include "model/bilstm.h"
#include "speech/speech_model.h"
#include "test_util.h"

namespace lt::test {

// A head sharpened and a blank made less likely than a random model makes
// them, so that decoding emits labels in every utterance.
inline void sharpen_head(SequenceModel& model) {
  Tensor w = model.params().value(model.params().index("predictor.weight"));
  std::vector<float> v = w.to_vector();
  for (float& x : v) x *= 12;
  w.copy_from(Tensor::from_vector(v, w.shape()));
  Tensor bias = model.params().value(model.params().index("predictor.bias"));
  std::vector<float> b = bias.to_vector();
  b[0] -= 4;
  bias.copy_from(Tensor::from_vector(b, bias.shape()));
}

// A front end over windows of filterbank frames with statistics of random frames.
inline SpeechFrontEnd random_front_end(Rng& rng, const FrameWindow& window) {
  SpeechFrontEnd f(FbankConfig{}, window);
  FeatureStats stats(40);
  const std::vector<float> frames = rng.normals(200 * 40, 3);
  stats.add(frames.data(), 200);
  f.set_statistics(stats);
  return f;
}

// A random speech model over windows of filterbank frames (3 stacked
// without context by default), with ff_conv taps of feed-forward
// convolution, and a sharpened head.
inline SpeechModel random_speech_model(Rng& rng, Direction dir, int64_t max_positions, uint64_t seed,
                                       int64_t classes = 6, const FrameWindow& window = FrameWindow{3},
                                       int64_t ff_conv = 0) {
  SpeechModel m;
  m.frontend = random_front_end(rng, window);
  TransformerConfig t{2, 2, 8, 16, 32, AttentionKind::linear, dir, "elu", 0.f};
  t.ff_conv = ff_conv;
  m.model = std::make_unique<SequenceModel>(speech_model_config(t, m.frontend.features(), classes, max_positions), Device::cpu);
  m.model->init_parameters(seed);
  sharpen_head(*m.model);
  return m;
}

// The same with the paper's Bi-LSTM baseline, tiny: 2 layers of 8 per direction.
inline SpeechModel random_bilstm_speech_model(Rng& rng, int64_t max_positions, uint64_t seed, int64_t classes = 6,
                                              const FrameWindow& window = FrameWindow{3}) {
  SpeechModel m;
  m.frontend = random_front_end(rng, window);
  m.model = std::make_unique<SequenceModel>(
      speech_model_config(LstmConfig{2, 8, 0.f}, m.frontend.features(), classes, max_positions), Device::cpu);
  m.model->init_parameters(seed);
  sharpen_head(*m.model);
  return m;
}

// Speech-like audio: a gliding tone with noise and pauses, 16 kHz.
inline std::vector<float> test_audio(Rng& rng, double seconds) {
  std::vector<float> x(size_t(seconds * 16000));
  double phase = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = double(i) / 16000;
    phase += 2 * M_PI * (300 + 200 * std::sin(2 * M_PI * 0.7 * t)) / 16000;
    const double gate = std::sin(2 * M_PI * 1.3 * t) > -0.3 ? 1 : 0.05;
    x[i] = float(gate * 0.4 * std::sin(phase) + 0.02 * rng.uniform());
  }
  return x;
}


}  // namespace lt::test
