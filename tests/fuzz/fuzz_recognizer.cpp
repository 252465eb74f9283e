// Recognition, as lt-asr runs it, on arbitrary audio: the bytes after the
// first two are raw PCM read by read_audio (byte 1 picks the rate, channels
// and sample format, as in fuzz_audio), cut to 0.2 s (the front end's cost
// grows with the audio, its paths do not), then transcribed by a tiny random
// model that restarts after pauses of 0.06 s (so that short inputs have
// them). Byte 0 picks the model (0 causal linear transformer, 1
// bidirectional transformer, 2 Bi-LSTM), the phone model on or off, and the
// beam (1 or 4; the phone model needs 4). Audio the reader accepts must be
// recognised without an error, its phones valid and in order; the causal
// model also streams it in pieces (sizes seeded by byte 1), which must give
// the offline phones exactly; the others refuse to stream in one line.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "audio/audio_file.h"
#include "fuzz_util.h"
#include "speech/language_model.h"
#include "speech/recognizer.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "harness: %s\n", what.c_str());
  std::abort();
}

// A model whose head is sharpened and blank made less likely, so that
// random weights still emit phones.
lt::SpeechModel tiny_model(int kind) {
  lt::SpeechModel m;
  m.frontend = lt::SpeechFrontEnd({}, lt::FrameWindow{3});
  lt::FeatureStats stats(40);
  std::minstd_rand rng(7);
  std::normal_distribution<float> normal(-8, 3);
  std::vector<float> frames(200 * 40);
  for (float& v : frames) v = normal(rng);
  stats.add(frames.data(), 200);
  m.frontend.set_statistics(stats);
  const int64_t F = m.frontend.features(), C = lt::kPhoneClasses;
  const lt::SequenceModelConfig c =
      kind == 2 ? lt::speech_model_config(lt::LstmConfig{1, 4, 0.f}, F, C, 32)
                : lt::speech_model_config(lt::TransformerConfig{1, 2, 8, 16, 32, lt::AttentionKind::linear,
                                                                kind == 0 ? lt::Direction::causal
                                                                          : lt::Direction::bidirectional,
                                                                "elu", 0.f},
                                          F, C, 32);
  m.model = std::make_unique<lt::SequenceModel>(c, lt::Device::cpu);
  m.model->init_parameters(uint64_t(11 + kind));
  lt::Tensor w = m.model->params().value(m.model->params().index("predictor.weight"));
  std::vector<float> v = w.to_vector();
  for (float& x : v) x *= 12;
  w.copy_from(lt::Tensor::from_vector(v, w.shape()));
  lt::Tensor bias = m.model->params().value(m.model->params().index("predictor.bias"));
  std::vector<float> b = bias.to_vector();
  b[0] -= 4;
  bias.copy_from(lt::Tensor::from_vector(b, bias.shape()));
  return m;
}

// A phone bigram model: every phone, and a few likely pairs.
lt::LanguageModel phone_model() {
  std::string unigrams, bigrams;
  int n2 = 0;
  for (int32_t p = 1; p < lt::kPhoneClasses; ++p) {
    const std::string& name = lt::phone_names()[size_t(p)];
    unigrams += "-1.6 " + name + " -0.3\n";
    if (p % 5 == 0) bigrams += "-0.2 " + name + " " + lt::phone_names()[size_t(p % 39 + 1)] + "\n", ++n2;
  }
  const std::string text = "\\data\\\nngram 1=" + std::to_string(lt::kPhoneClasses + 1) + "\nngram 2=" +
                           std::to_string(n2) + "\n\n\\1-grams:\n-99 <s> -0.3\n-1.6 </s>\n" + unigrams +
                           "\n\\2-grams:\n" + bigrams + "\n\\end\\\n";
  const std::string path = lt::fuzz::scratch_dir() + "/phones.arpa";
  lt::fuzz::write_file(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  return lt::read_arpa(path);
}

struct Setup {
  lt::SpeechModel models[3] = {tiny_model(0), tiny_model(1), tiny_model(2)};
  lt::LanguageModel phones = phone_model();
  std::unique_ptr<lt::SpeechRecognizer> recognizers[3][2];  // [model][phone model]
  lt::RecognizerOptions options[2];

  Setup() {
    for (int lm = 0; lm < 2; ++lm) {
      options[lm].decoding.beam = options[lm].phone_search.beam = lm ? 4 : 1;
      options[lm].phone_lm = lm ? &phones : nullptr;
      options[lm].pause_seconds = 0.06;
    }
    for (int k = 0; k < 3; ++k) {
      for (int lm = 0; lm < 2; ++lm) recognizers[k][lm] = std::make_unique<lt::SpeechRecognizer>(models[k], options[lm]);
      if (k > 0) lt::fuzz::expect_lt_error_only("streaming needs a causal-linear model", [&] {
          lt::SpeechStream s(models[k], options[0]);
          finding("a model without a recurrent form streams");
        });
    }
  }
};

void check_phones(const std::vector<lt::CtcToken>& phones, int64_t positions) {
  int64_t last = -1;
  for (const lt::CtcToken& t : phones) {
    if (t.label < 1 || t.label >= lt::kPhoneClasses) finding("a phone label outside 1..39");
    if (t.start <= last || t.end < t.start || t.end >= positions) finding("phones out of order or outside the audio");
    last = t.end;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static Setup setup;
  const int kind = data[0] % 3, lm = (data[0] / 3) % 2;
  const int rates[4] = {8000, 16000, 22050, 44100};
  const lt::PcmFormat formats[5] = {lt::PcmFormat::s16le, lt::PcmFormat::s24le, lt::PcmFormat::s32le,
                                    lt::PcmFormat::f32le, lt::PcmFormat::u8};
  const lt::RawAudio raw{rates[data[1] % 4], 1 + (data[1] >> 2) % 2, formats[(data[1] >> 3) % 5]};
  const std::string path = lt::fuzz::scratch_dir() + "/input.raw";
  lt::fuzz::write_file(path, data + 2, size - 2);
  std::vector<float> samples;
  lt::fuzz::expect_lt_error_only(path, [&] { samples = lt::read_audio(path, raw); });
  if (samples.empty()) return 0;
  samples.resize(std::min<size_t>(samples.size(), 3200));
  lt::Transcript offline;
  try {
    offline = setup.recognizers[kind][lm]->transcribe(samples);
  } catch (const std::exception& e) {
    finding(std::string("audio the reader accepted is not recognised: ") + e.what());
  }
  check_phones(offline.phones, offline.positions);
  if (kind != 0) return 0;
  try {
    lt::SpeechStream stream(setup.models[0], setup.options[lm]);
    std::minstd_rand rng(data[1]);
    std::vector<lt::CtcToken> phones;
    for (size_t at = 0; at < samples.size();) {
      const size_t n = std::min(samples.size() - at, size_t(1 + rng() % 2000));
      stream.push(samples.data() + at, int64_t(n));
      at += n;
      stream.take_settled(phones);
    }
    stream.finish();
    stream.take_settled(phones);
    if (phones != offline.phones || stream.positions() != offline.positions)
      finding("streaming in pieces gives other phones than offline recognition");
  } catch (const lt::Error& e) {
    finding(std::string("audio the reader accepted is not streamed: ") + e.what());
  }
  return 0;
}
