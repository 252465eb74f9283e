// Recognition with random speech models: the offline recognizer against the
// model's own passes (the recurrent step position by position, restarted in
// pauses; every possible window of a bidirectional model), and streaming in
// any pieces against offline recognition of the whole recording.
#include <algorithm>

#include "backend/device.h"
#include "io/temp_dir.h"
#include "speech/random_speech_model.h"
#include "speech/recognizer.h"

using namespace lt;
using namespace lt::test;


namespace {

// Restarts of a causal encoder over logits [positions, C] (its rule: a run of
// `pause` positions whose likeliest class is the blank).
int64_t pauses_in(const std::vector<float>& logits, int64_t C, int64_t pause) {
  int64_t runs = 0, blanks = 0;
  for (size_t p = 0; p * size_t(C) < logits.size(); ++p) {
    const float* row = logits.data() + p * size_t(C);
    blanks = std::max_element(row, row + C) == row ? blanks + 1 : 0;
    if (blanks == pause) runs += 1, blanks = 0;
  }
  return runs;
}

// Moves the blank's bias so that the blank is the likeliest class at a share
// of the positions of inputs (without restarts): the model then pauses now
// and then. The bias is set halfway between two positions' thresholds, not
// on one, so that no position is a near tie that rounding could break.
void make_pausing(SpeechModel& m, const std::vector<float>& inputs, double share) {
  Tensor bias = m.model->params().value(m.model->params().index("predictor.bias"));
  std::vector<float> b = bias.to_vector();
  const int64_t C = int64_t(b.size()), P = int64_t(inputs.size()) / m.model->config().input_features;
  RecognizerOptions never;
  never.pause_seconds = 0;
  const std::vector<float> l = SpeechRecognizer(m, never).logits(inputs, P);
  std::vector<float> threshold;  // the shift above which position p is a blank
  for (int64_t p = 0; p < P; ++p) {
    const float* row = l.data() + p * C;
    threshold.push_back(*std::max_element(row + 1, row + C) - row[0]);
  }
  std::sort(threshold.begin(), threshold.end());
  const size_t k = std::min(size_t(double(P) * share), size_t(P - 2));
  b[0] += (threshold[k] + threshold[k + 1]) / 2;
  bias.copy_from(Tensor::from_vector(b, bias.shape()));
}

}  // namespace

TEST_CASE("offline recognition with a causal linear model equals its recurrent step, started afresh after each pause") {
  const uint64_t seed = fresh_seed();
  int64_t conv = 0;
  SUBCASE("without a feed-forward convolution") {}
  SUBCASE("with a causal feed-forward convolution, whose window restarts too") { conv = 4; }
  INFO("seed " << seed << ", feed-forward convolution " << conv);
  Rng rng(seed);
  SpeechModel m = random_speech_model(rng, Direction::causal, 16, seed, 6, FrameWindow{3}, conv);
  const int64_t P = 230, F = m.model->config().input_features, C = 6;
  const std::vector<float> inputs = rng.normals(P * F);
  const double position = position_start_seconds(m.frontend, 1);
  // The last case pauses longer than a chunk of the encoder (64 positions).
  for (const auto& [share, pause] : {std::pair<double, int64_t>{0.6, 0}, {0.6, 1}, {0.6, 3}, {1.0, 70}}) {
    make_pausing(m, inputs, share);
    INFO("blank share " << share << ", pause " << pause);
    RecognizerOptions options;
    options.pause_seconds = double(pause) * position;
    const std::vector<float> got = SpeechRecognizer(m, options).logits(inputs, P);
    // The reference: the recurrent step position by position, its state
    // and position code restarted when a run of blanks reaches the pause.
    // The blanks are read from got, so that a near tie, which rounding may
    // break either way, cannot send the two down different paths.
    RecurrentState state = m.model->new_state(1);
    state.buffer.zero();
    Tensor head = Tensor::empty({1, C});
    std::vector<double> want;
    int64_t blanks = 0, restarts = 0;
    for (int64_t t = 0; t < P; ++t) {
      m.model->step(state, Tensor::from_vector(std::vector<float>(inputs.begin() + t * F, inputs.begin() + (t + 1) * F), {1, F}), head);
      const std::vector<float> h = head.to_vector();
      want.insert(want.end(), h.begin(), h.end());
      const float* row = got.data() + t * C;
      blanks = std::max_element(row, row + C) == row ? blanks + 1 : 0;
      if (pause > 0 && blanks == pause) {
        state.reset();
        blanks = 0;
        ++restarts;
      }
    }
    CHECK(rel_error(got, want) < 1e-5);
    // The restarts are exercised. After a restart a fresh state may not
    // pause again for 70 positions, so the last case asks for one.
    if (pause > 0) CHECK(restarts >= (pause > 64 ? 1 : 2));
  }
}

TEST_CASE("offline recognition with a bidirectional model takes each position from a window it is well inside") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t W = 16, F = 120, C = 6;
  SpeechModel m;
  // The Bi-LSTM has no recurrent form either: the recognizer runs it as it
  // does the bidirectional transformer.
  SUBCASE("transformer") { m = random_speech_model(rng, Direction::bidirectional, W, seed); }
  SUBCASE("Bi-LSTM") { m = random_bilstm_speech_model(rng, W, seed); }
  INFO(m.model->config().describe_encoder());
  RecognizerOptions never;
  never.pause_seconds = 0;
  SpeechRecognizer r(m, never);
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

TEST_CASE("offline recognition with a bidirectional model encodes each stretch between pauses on its own") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t W = 64, F = 120, C = 6, P = 150, pause = 3;
  SpeechModel m = random_speech_model(rng, Direction::bidirectional, W, seed);
  const std::vector<float> inputs = rng.normals(P * F);
  make_pausing(m, inputs, 0.6);
  RecognizerOptions never, pausing;
  never.pause_seconds = 0;
  pausing.pause_seconds = double(pause) * position_start_seconds(m.frontend, 1);
  const std::vector<float> first = SpeechRecognizer(m, never).logits(inputs, P);
  const std::vector<float> got = SpeechRecognizer(m, pausing).logits(inputs, P);
  // The stretches: each ends where a run of blanks in the first pass reaches the pause.
  std::vector<int64_t> ends;
  for (int64_t p = 0, blanks = 0; p < P; ++p) {
    const float* row = first.data() + p * C;
    blanks = std::max_element(row, row + C) == row ? blanks + 1 : 0;
    if (blanks == pause) ends.push_back(p + 1), blanks = 0;
  }
  INFO(ends.size() << " pauses");
  REQUIRE(ends.size() > 3);
  if (ends.back() != P) ends.push_back(P);
  std::vector<float> want;
  for (size_t i = 0; i < ends.size(); ++i) {
    const int64_t a = i == 0 ? 0 : ends[i - 1], n = ends[i] - a;
    REQUIRE(n <= W);  // a stretch is one window: the model's own pass over it
    SequenceBatch b;
    b.rows = 1;
    b.length = n;
    b.features.assign(inputs.begin() + a * F, inputs.begin() + (a + n) * F);
    const std::vector<float> h = m.model->predict(b, {}).to_vector();
    want.insert(want.end(), h.begin(), h.end());
  }
  CHECK(got == want);
}

TEST_CASE("streaming recognition in any pieces, one sample at a time too, gives the offline phones and frames") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Stacks without context, with context before, and with context after,
  // which a stream has to wait for.
  // With past context, a feed-forward convolution too.
  FrameWindow window{3};
  int64_t conv = 0;
  SUBCASE("past context") { window = FrameWindow{3, 4, 0}, conv = 3; }
  SUBCASE("past and future context") { window = FrameWindow{2, 3, 5}; }
  INFO("window " << window.stack << " " << window.past << " " << window.future << ", convolution " << conv);
  const std::vector<float> audio = test_audio(rng, 4.0);
  // A model that pauses now and then, so that the stream has to cut where
  // offline recognition does. A random model can favour one label
  // everywhere: draw until one says several and pauses several times.
  RecognizerOptions pausing;
  SpeechModel m;
  int64_t pauses = 0;
  for (uint64_t draw = 0; draw < 20; ++draw) {
    m = random_speech_model(rng, Direction::causal, 48, seed + draw, 6, window, conv);
    const std::vector<float> inputs = m.frontend.encoder_inputs(m.frontend.filterbank(audio));
    make_pausing(m, inputs, 0.45);
    pausing.pause_seconds = 2 * position_start_seconds(m.frontend, 1);
    SpeechRecognizer r(m, pausing);
    pauses = pauses_in(r.logits(inputs, int64_t(inputs.size()) / m.model->config().input_features), 6, 2);
    if (pauses > 2 && r.transcribe(audio).phones.size() > 3) break;
  }
  INFO("pauses " << pauses);
  CHECK(pauses > 2);
  for (int beam : {1, 8}) {
    RecognizerOptions options = pausing;
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

TEST_CASE("recognition with bf16 products stays close to fp32, for causal and bidirectional models") {
  if (!cpu_has_bf16()) {
    MESSAGE("skipped: this CPU has no AVX512_BF16");
    return;
  }
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (Direction dir : {Direction::causal, Direction::bidirectional}) {
    SpeechModel m = random_speech_model(rng, dir, 64, seed, 6, FrameWindow{3}, 3);
    const int64_t P = 100, F = m.model->config().input_features;
    const std::vector<float> inputs = rng.normals(P * F);
    RecognizerOptions fp32;
    fp32.pause_seconds = 0;  // no cut that a rounding could move
    RecognizerOptions bf16 = fp32;
    bf16.precision.products = Products::bf16;
    const std::vector<float> want = SpeechRecognizer(m, fp32).logits(inputs, P);
    const std::vector<float> got = SpeechRecognizer(m, bf16).logits(inputs, P);
    INFO(direction_name(dir));
    const double err = rel_error(got, std::vector<double>(want.begin(), want.end()));
    CHECK(err > 0);  // the products did change
    CHECK(err < 2e-2);
  }
}

TEST_CASE("streaming refuses a bidirectional model in one line, a Bi-LSTM too, which transcribes whole recordings") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SpeechModel m;
  SUBCASE("transformer") { m = random_speech_model(rng, Direction::bidirectional, 16, seed); }
  SUBCASE("Bi-LSTM") { m = random_bilstm_speech_model(rng, 16, seed); }
  const std::string msg = error_of([&] { SpeechStream s(m); });
  CHECK(msg.find("causal-linear") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  // Whole recordings, pauses and all, greedy and with a beam.
  const std::vector<float> audio = test_audio(rng, 2.0);
  for (int beam : {1, 8}) {
    RecognizerOptions options;
    options.decoding.beam = beam;
    const Transcript t = SpeechRecognizer(m, options).transcribe(audio);
    CHECK(t.positions == m.frontend.positions(m.frontend.fbank().frames(int64_t(audio.size()))));
    CHECK(!t.phones.empty());
  }
}

TEST_CASE("a negative or non-finite pause is refused in one line when the recognizer or stream is made") {
  const uint64_t seed = fresh_seed();
  Rng rng(seed);
  SpeechModel m = random_speech_model(rng, Direction::causal, 16, seed);
  for (double pause : {-0.1, double(NAN)}) {
    RecognizerOptions options;
    options.pause_seconds = pause;
    for (const std::string& msg : {error_of([&] { SpeechRecognizer r(m, options); }),
                                   error_of([&] { SpeechStream s(m, options); })}) {
      CHECK(msg.find("must be >= 0 seconds") != std::string::npos);
      CHECK(msg.find('\n') == std::string::npos);
    }
  }
}
