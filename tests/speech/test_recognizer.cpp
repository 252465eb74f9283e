// Recognition with random speech models: the offline recognizer against the
// model's own passes (the recurrent step position by position; every
// possible window of a bidirectional model), and streaming in any pieces
// against offline recognition of the whole recording.
#include "io/temp_dir.h"
#include "lt/recognizer.h"
#include "speech/random_speech_model.h"

using namespace lt;
using namespace lt::test;


TEST_CASE("offline recognition with a causal linear model equals its recurrent step, over pieces of max_positions") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SpeechModel m = random_speech_model(rng, Direction::causal, 16, seed);
  const int64_t P = 53, F = m.model->config().input_features, C = 6;
  const std::vector<float> inputs = rng.normals(P * F);
  SpeechRecognizer r(m);
  const std::vector<float> got = r.logits(inputs, P);
  RecurrentState state = m.model->new_state(1);
  state.buffer.zero();
  Tensor head = Tensor::empty({1, C});
  std::vector<double> want;
  for (int64_t t = 0; t < P; ++t) {
    m.model->step(state, Tensor::from_vector(std::vector<float>(inputs.begin() + t * F, inputs.begin() + (t + 1) * F), {1, F}), t, head);
    for (float v : head.to_vector()) want.push_back(v);
  }
  CHECK(rel_error(got, want) < 1e-5);
}

TEST_CASE("offline recognition with a bidirectional model takes each position from a window it is well inside") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t W = 16, F = 120, C = 6;
  SpeechModel m = random_speech_model(rng, Direction::bidirectional, W, seed);
  SpeechRecognizer r(m);
  for (int64_t P : {int64_t(5), W, int64_t(37), int64_t(64)}) {
    INFO("positions " << P);
    const std::vector<float> inputs = rng.normals(P * F);
    const std::vector<float> got = r.logits(inputs, P);
    // Every possible window's logits, by the model's own pass.
    const int64_t T = std::min(W, P);
    std::vector<std::vector<float>> windows;
    for (int64_t s = 0; s + T <= P; ++s) {
      SequenceBatch b;
      b.rows = 1;
      b.length = T;
      b.features.assign(inputs.begin() + s * F, inputs.begin() + (s + T) * F);
      windows.push_back(m.model->predict(b, {}).to_vector());
    }
    for (int64_t p = 0; p < P; ++p) {
      bool found = false;
      for (int64_t s = 0; s < int64_t(windows.size()) && !found; ++s) {
        // At least a quarter of a window of context on each side, or the sequence's edge.
        const bool inside = (p - s >= T / 4 || s == 0) && (s + T - 1 - p >= T / 4 || s + T == P);
        if (!inside || p < s || p >= s + T) continue;
        double diff = 0;
        for (int64_t c = 0; c < C; ++c) diff = std::max(diff, double(std::abs(got[p * C + c] - windows[s][(p - s) * C + c])));
        found = diff == 0;
      }
      INFO("position " << p);
      CHECK(found);
    }
  }
}

TEST_CASE("streaming recognition in any pieces, one sample at a time too, gives the offline phones and frames") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::vector<float> audio = test_audio(rng, 2.3);
  // A random model can favour one label everywhere: draw until one says several.
  SpeechModel m = random_speech_model(rng, Direction::causal, 32, seed);
  for (uint64_t draw = 1; draw < 20 && SpeechRecognizer(m).transcribe(audio).phones.size() <= 3; ++draw)
    m = random_speech_model(rng, Direction::causal, 32, seed + draw);
  for (int beam : {1, 8}) {
    RecognizerOptions options;
    options.decoding.beam = beam;
    const Transcript whole = SpeechRecognizer(m, options).transcribe(audio);
    INFO("beam " << beam << ": " << whole.phones.size() << " phones over " << whole.positions << " positions");
    CHECK(whole.phones.size() > 3);
    for (int pieces : {0, 1, 2}) {
      SpeechStream s(m, options);
      std::vector<CtcToken> got;
      for (size_t at = 0; at < audio.size();) {
        const size_t n = pieces == 0 ? 1 : pieces == 1 ? size_t(rng.integer(1, 4000)) : size_t(160 * 3);
        const size_t take = std::min(n, audio.size() - at);
        s.push(audio.data() + at, int64_t(take));
        at += take;
        s.take_settled(got);
      }
      s.finish();
      s.take_settled(got);
      INFO("pieces " << pieces);
      CHECK(s.positions() == whole.positions);
      CHECK(s.samples() == int64_t(audio.size()));
      CHECK(got == whole.phones);
      CHECK(s.tentative().empty());
    }
  }
}

TEST_CASE("streaming refuses a bidirectional model in one line") {
  const uint64_t seed = fresh_seed();
  Rng rng(seed);
  SpeechModel m = random_speech_model(rng, Direction::bidirectional, 16, seed);
  const std::string msg = error_of([&] { SpeechStream s(m); });
  CHECK(msg.find("causal-linear") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
}
