// SpeechStreamGroup: many streams stepped together, each against the same
// audio in a stream of its own: the same settled and tentative phones and
// words after every push, whatever the other streams do, with streams that
// start, finish and leave at random times, and pushes from other threads.
#include <atomic>
#include <thread>

#include "audio/audio_file.h"
#include "audio/resampler.h"
#include "backend/device.h"
#include "io/temp_dir.h"
#include "speech/random_speech_model.h"
#include "speech/recognizer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// Words over a few phones, so that a random model says some of them.
Lexicon small_lexicon(Rng& rng) {
  Lexicon lex;
  for (int w = 0; w < 12; ++w) {
    std::vector<int32_t> p;
    const int64_t n = rng.integer(1, 3);
    for (int64_t i = 0; i < n; ++i) p.push_back(int32_t(rng.integer(1, 6)));
    lex.words["W" + std::to_string(w)] = p;
  }
  return lex;
}

// What a stream shows after a push: everything settled so far, and the tentative tail.
struct Seen {
  std::vector<CtcToken> settled, tentative;
  std::vector<std::string> words, tentative_words;
  bool operator==(const Seen& o) const {
    return settled == o.settled && tentative == o.tentative && words == o.words && tentative_words == o.tentative_words;
  }
};

void look(SpeechStream& s, Seen& seen) {
  std::vector<RecognizedWord> w;
  s.take_settled(seen.settled, &w);
  for (const RecognizedWord& x : w) seen.words.push_back(x.word);
  seen.tentative = s.tentative();
  seen.tentative_words.clear();
  for (const RecognizedWord& x : s.tentative_words()) seen.tentative_words.push_back(x.word);
}

struct Plan {
  std::vector<float> audio;
  std::vector<size_t> pieces;  // sizes pushed, in order
  int64_t start = 0;           // the tick it opens at
  bool leaves = false;         // closed before its end, never finished
};

struct Setup {
  SpeechModel model;
  Lexicon lexicon;
  RecognizerOptions options;
};

Setup make_setup(Rng& rng, uint64_t seed, Products products = Products::fp32) {
  Setup s;
  s.options.precision.products = products;
  s.model = random_speech_model(rng, Direction::causal, 64, seed, kPhoneClasses, FrameWindow{3, 4, 0}, 3);
  s.lexicon = small_lexicon(rng);
  s.options.decoding.beam = 4;
  s.options.lexicon = &s.lexicon;
  s.options.pause_seconds = 2 * position_start_seconds(s.model.frontend, 1);  // restarts now and then
  return s;
}

std::vector<Plan> make_plans(Rng& rng, int64_t n) {
  std::vector<Plan> plans(static_cast<size_t>(n));
  for (Plan& p : plans) {
    p.audio = test_audio(rng, rng.uniform(0.3, 1.5));
    for (size_t at = 0; at < p.audio.size();) {
      const size_t k = std::min(p.audio.size() - at, size_t(rng.integer(1, 3000)));
      p.pieces.push_back(k);
      at += k;
    }
    p.start = rng.integer(0, 20);
    p.leaves = rng.uniform(0, 1) < 0.1;
  }
  return plans;
}

// The stream alone: what it shows after each push, then after finish.
std::vector<Seen> alone(Setup& setup, const Plan& p) {
  SpeechStream s(setup.model, setup.options);
  std::vector<Seen> out;
  Seen seen;
  size_t at = 0;
  for (size_t k : p.pieces) {
    s.push(p.audio.data() + at, int64_t(k));
    at += k;
    look(s, seen);
    out.push_back(seen);
  }
  s.finish();
  look(s, seen);
  out.push_back(seen);
  return out;
}

}  // namespace

TEST_CASE("64 streams stepped together show, after every push, what each shows alone") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  // lt-asr's --bf16 too, where the CPU has it: its products take other
  // kernels (AVX512_BF16, AMX), whose rows must not depend on the batch either.
  std::vector<Products> products = {Products::fp32};
  if (cpu_has_bf16()) products.push_back(Products::bf16);
  for (Products kind : products) {
    INFO("products " << products_name(kind));
    Rng rng(seed);
    Setup setup = make_setup(rng, seed, kind);
    const std::vector<Plan> plans = make_plans(rng, 64);
    SpeechStreamGroup group(setup.model, setup.options);
    std::vector<std::unique_ptr<SpeechStream>> streams(plans.size());
    std::vector<std::vector<Seen>> seen(plans.size());
    std::vector<Seen> now(plans.size());
    std::vector<size_t> next(plans.size(), 0), at(plans.size(), 0);
    std::vector<char> over(plans.size(), 0);
    int64_t most = 0, positions = 0;
    for (int64_t tick = 0; std::count(over.begin(), over.end(), 1) < int64_t(plans.size()); ++tick) {
      std::vector<size_t> pushed;
      for (size_t i = 0; i < plans.size(); ++i) {
        const Plan& p = plans[i];
        if (over[i] || tick < p.start) continue;
        if (!streams[i]) streams[i] = group.open();
        if (p.leaves && next[i] == p.pieces.size() / 2) {  // leaves midway, its row given back
          streams[i].reset();
          over[i] = 1;
          continue;
        }
        if (rng.uniform(0, 1) < 0.3) continue;  // nothing new this tick
        if (next[i] < p.pieces.size()) {
          streams[i]->push(p.audio.data() + at[i], int64_t(p.pieces[next[i]]));
          at[i] += p.pieces[next[i]++];
        } else {
          streams[i]->finish();
        }
        pushed.push_back(i);
      }
      const StreamStepStats stats = group.step();
      most = std::max(most, stats.stepped);
      positions += stats.positions;
      for (size_t i : pushed) {
        look(*streams[i], now[i]);
        seen[i].push_back(now[i]);
        if (streams[i]->done()) {
          CHECK(streams[i]->tentative().empty());
          streams[i].reset();
          over[i] = 1;
        }
      }
    }
    INFO("most streams in one step " << most << ", positions " << positions);
    CHECK(most > 8);
    CHECK(group.streams() > 0);  // closed streams leave at the next step
    group.step();
    CHECK(group.streams() == 0);
    int64_t compared = 0, phones = 0, words = 0;
    for (size_t i = 0; i < plans.size(); ++i) {
      const std::vector<Seen> want = alone(setup, plans[i]);
      INFO("stream " << i);
      REQUIRE(seen[i].size() <= want.size());
      for (size_t k = 0; k < seen[i].size(); ++k) CHECK(seen[i][k] == want[k]);
      if (!plans[i].leaves) {
        CHECK(seen[i].size() == want.size());
        ++compared;
        phones += int64_t(want.back().settled.size());
        words += int64_t(want.back().words.size());
      }
    }
    INFO(compared << " streams to their end, " << phones << " phones, " << words << " words");
    CHECK(compared > 40);
    CHECK(phones > 100);  // the comparison saw something to compare
    CHECK(words > 10);
  }
}

TEST_CASE("streams pushed from other threads while the group steps get what each gets alone") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Setup setup = make_setup(rng, seed);
  std::vector<Plan> plans = make_plans(rng, 24);
  for (Plan& p : plans) p.leaves = false;
  SpeechStreamGroup group(setup.model, setup.options);
  std::vector<std::unique_ptr<SpeechStream>> streams(plans.size());
  for (auto& s : streams) s = group.open();
  std::atomic<int> pushing{4};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = size_t(t); i < plans.size(); i += 4) {
        size_t at = 0;
        for (size_t k : plans[i].pieces) {
          streams[i]->push(plans[i].audio.data() + at, int64_t(k));
          at += k;
          std::this_thread::yield();
        }
        streams[i]->finish();
      }
      --pushing;
    });
  std::vector<Seen> got(plans.size());
  auto all_done = [&] {
    for (auto& s : streams)
      if (!s->done()) return false;
    return true;
  };
  while (pushing > 0 || !all_done()) {
    group.step();
    for (size_t i = 0; i < plans.size(); ++i) look(*streams[i], got[i]);
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("stream " << i);
    const Seen want = alone(setup, plans[i]).back();
    CHECK(got[i] == want);
  }
}

TEST_CASE("a group refuses a model without a fixed-size state, and a stream refuses audio after its end") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SpeechModel bidirectional = random_speech_model(rng, Direction::bidirectional, 32, seed);
  CHECK(error_of([&] { SpeechStreamGroup g(bidirectional); }).find("causal-linear") != std::string::npos);
  SpeechModel causal = random_speech_model(rng, Direction::causal, 32, seed);
  SpeechStreamGroup g(causal);
  std::unique_ptr<SpeechStream> s = g.open();
  const std::vector<float> audio = test_audio(rng, 0.2);
  s->push(audio.data(), int64_t(audio.size()));
  s->finish();
  CHECK(error_of([&] { s->push(audio.data(), 1); }).find("after finish") != std::string::npos);
  CHECK(!s->done());  // no step yet
  g.step();
  CHECK(s->done());
  CHECK(s->samples() == int64_t(audio.size()));
}

TEST_CASE("a stream told another sample rate resamples what is pushed, in any pieces, as the whole resampled at once") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Setup setup = make_setup(rng, seed);
  const double rate = rng.uniform(0, 1) < 0.5 ? 8000 : 44100;
  INFO("rate " << rate);
  const std::vector<float> at16 = test_audio(rng, 3.0);
  const std::vector<float> audio = audio::resample(at16, kSpeechSampleRate, rate);
  // The reference: the same resampler over the whole recording, pushed at 16 kHz.
  std::vector<float> resampled;
  audio::Resampler whole(rate, "test");
  whole.process(audio.data(), audio.size(), resampled);
  whole.flush(resampled);
  SpeechStream want(setup.model, setup.options);
  want.push(resampled.data(), int64_t(resampled.size()));
  want.finish();
  Seen w;
  look(want, w);
  SpeechStreamGroup group(setup.model, setup.options);
  std::unique_ptr<SpeechStream> s = group.open();
  s->set_input_rate(rate);
  for (size_t at = 0; at < audio.size();) {
    const size_t n = std::min(audio.size() - at, size_t(rng.integer(1, 5000)));
    s->push(audio.data() + at, int64_t(n));
    at += n;
    if (rng.uniform(0, 1) < 0.5) group.step();
  }
  s->finish();
  group.step();
  Seen got;
  look(*s, got);
  CHECK(s->done());
  CHECK(s->samples() == int64_t(resampled.size()));
  CHECK(got == w);
  CHECK(!w.settled.empty());  // the random model settles few phones: one was seen on 1.5 s
  CHECK(error_of([&] { s->set_input_rate(16000); }).find("before the first push") != std::string::npos);
  std::unique_ptr<SpeechStream> other = group.open();
  CHECK(error_of([&] { other->set_input_rate(100); }).find("sample rate") != std::string::npos);
}
