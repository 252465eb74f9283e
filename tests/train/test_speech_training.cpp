// The speech task on the one training loop: length-bucketed batches as a
// function of (seed, step), bitwise resumption with SpecAugment, the vocal
// tract warp and the plateau rule, and the plateau rule itself.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "audio/audio_files.h"
#include "audio/augment.h"
#include "io/safetensors.h"
#include "io/temp_dir.h"
#include "test_util.h"
#include "train/speech_training.h"

using namespace lt;
using namespace lt::test;

namespace {

// n utterances of 3..40 positions with random frames and phones that fit them.
SpeechSet random_set(Rng& rng, int64_t n, int64_t width) {
  SpeechSet s;
  s.width = width;
  s.start = {0};
  s.phones.offsets = {0};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = rng.integer(3, 40);
    const std::vector<float> f = rng.normals(len * width);
    s.inputs.insert(s.inputs.end(), f.begin(), f.end());
    s.start.push_back(s.start.back() + len);
    // No adjacent repeats, so len / 2 labels always fit.
    int32_t last = 0;
    for (int64_t k = rng.integer(1, len / 2); k > 0; --k) {
      int32_t p;
      do p = int32_t(rng.integer(1, 4));
      while (p == last);
      s.phones.labels.push_back(last = p);
    }
    s.phones.offsets.push_back(int64_t(s.phones.labels.size()));
    s.speakers.push_back(i % 2 ? "voice-a" : "voice-b");
  }
  return s;
}

// A front end of width bins, one frame per position, with the set's statistics.
SpeechFrontEnd frontend_of(const SpeechSet& set) {
  FbankConfig c;
  c.bins = int(set.width);
  SpeechFrontEnd f(c);
  FeatureStats stats(c.bins);
  stats.add(set.inputs.data(), int64_t(set.inputs.size()) / set.width);
  f.set_statistics(stats);
  return f;
}

SequenceModelConfig tiny_config(int64_t width) {
  TransformerConfig t{2, 2, 4, 8, 16, AttentionKind::linear, Direction::bidirectional, "elu", 0.1f};
  return speech_model_config(t, width, 5, 64);
}

std::vector<float> values_of(SequenceModel& m) { return m.params().values().to_vector(); }

}  // namespace

TEST_CASE("speech batches: an epoch's batches are disjoint, of similar lengths, and a function of seed and step") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = 203, rows = 8;
  SpeechSet set = random_set(rng, n, 3);
  SpeechTrainingTask task(set, SpeechSet{}, seed, frontend_of(set));
  SpeechTrainingTask again(set, SpeechSet{}, seed, frontend_of(set));
  const int64_t per_epoch = n / rows;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::vector<float>> rows_seen;
    int64_t real = 0, padded = 0;
    for (int64_t s = epoch * per_epoch; s < (epoch + 1) * per_epoch; ++s) {
      SequenceBatch b, c;
      task.batch(s, rows, b);
      again.batch(s, rows, c);
      CHECK(b.features == c.features);  // a function of (seed, step)
      CHECK(b.rows == rows);
      CHECK(b.labels.rows() == rows);
      for (int64_t r = 0; r < rows; ++r) {
        real += b.lengths[r];
        rows_seen.insert(std::vector<float>(b.features.begin() + r * b.length * 3,
                                            b.features.begin() + r * b.length * 3 + 3));
        for (int64_t i = b.lengths[r] * 3; i < b.length * 3; ++i) CHECK(b.features[r * b.length * 3 + i] == 0.f);
      }
      padded += b.rows * b.length;
    }
    // Disjoint: each utterance's first frame at most once an epoch.
    for (const auto& f : rows_seen) CHECK(rows_seen.count(f) == 1);
    CHECK(int64_t(rows_seen.size()) == per_epoch * rows);
    // Random batches of lengths 3..40 pad about half; buckets far less.
    CHECK(1.0 - double(real) / double(padded) < 0.15);
  }
  CHECK(task.epoch(per_epoch * 3, rows) == doctest::Approx(3.0));
}

TEST_CASE("speech batches with the warp: each row is its plain row warped by one factor in [1 - v, 1 + v]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SpeechSet set = random_set(rng, 40, 6);
  const SpeechFrontEnd frontend = frontend_of(set);
  SpeechAugmentation warp;
  warp.vtlp = 0.1;
  SpeechTrainingTask plain(set, SpeechSet{}, seed, frontend), warped(set, SpeechSet{}, seed, frontend, warp);
  SequenceBatch a, b;
  const int64_t step = rng.integer(0, 20);
  plain.batch(step, 4, a);
  warped.batch(step, 4, b);
  REQUIRE(a.lengths == b.lengths);
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t n = a.lengths[size_t(r)];
    const float* got = b.features.data() + r * b.length * 6;
    // The factor, found by search: the best of 2,001 candidates (steps of 1e-4)
    // fits within 1e-2; the warp itself moves values by tenths.
    double best = 1e9;
    for (int k = 0; k <= 2000; ++k) {
      std::vector<float> row(a.features.begin() + r * a.length * 6, a.features.begin() + (r * a.length + n) * 6);
      frontend.warp_normalized(row.data(), n, 0.9 + 0.2 * k / 2000.0);
      double err = 0;
      for (int64_t i = 0; i < n * 6; ++i) err = std::max(err, double(std::abs(row[size_t(i)] - got[i])));
      best = std::min(best, err);
    }
    CHECK(best < 1e-2);
    bool changed = false;
    for (int64_t i = 0; i < n * 6; ++i) changed |= got[i] != a.features[size_t(r * a.length * 6 + i)];
    CHECK(changed);
    for (int64_t i = n * 6; i < b.length * 6; ++i) CHECK(got[i] == 0.f);  // padding untouched
  }
}

TEST_CASE("speech batches with context frames: each row is its utterance's encoder inputs, augmented before the context is added") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int bins = 5;
  FbankConfig c;
  c.bins = bins;
  SpeechFrontEnd frontend(c, FrameWindow{2, 3, 2});
  // Raw frames of utterances of 6..40 frames, an odd count now and then (a partial last stack).
  std::vector<Utterance> utts;
  std::vector<std::vector<float>> raw;
  for (int i = 0; i < 24; ++i) {
    raw.push_back(rng.normals(rng.integer(6, 40) * bins, 2));
    Utterance u;
    u.speaker = "v";
    u.phones = {1, 2};
    utts.push_back(u);
  }
  frontend.set_statistics(filterbank_statistics(raw, bins));
  const SpeechSet set = make_speech_set(utts, raw, frontend, 100);
  REQUIRE(set.size() == 24);
  CHECK(set.input_width() == frontend.features());
  CHECK(set.width == 2 * bins);
  SpeechTrainingTask task(set, SpeechSet{}, seed, frontend);
  SequenceBatch b;
  task.batch(rng.integer(0, 5), 6, b);
  const int64_t F = frontend.features();
  REQUIRE(b.features.size() == size_t(b.rows * b.length * F));
  for (int64_t r = 0; r < b.rows; ++r) {
    const std::vector<float> row(b.features.begin() + r * b.length * F, b.features.begin() + (r * b.length + b.lengths[r]) * F);
    int matches = 0;
    for (const auto& frames : raw) matches += frontend.encoder_inputs(frames) == row;
    CHECK(matches == 1);
    for (int64_t i = b.lengths[r] * F; i < b.length * F; ++i) CHECK(b.features[size_t(r * b.length * F + i)] == 0.f);
  }
  // SpecAugment masks the frames; the context then repeats the masked frames.
  SpeechAugmentation masks;
  masks.masks = true;
  masks.spec = SpecAugment{1, 2, 1, 4};
  SpeechTrainingTask masked(set, SpeechSet{}, seed, frontend, masks);
  SequenceBatch m, unmasked;
  masked.batch(3, 6, m);
  task.batch(3, 6, unmasked);
  CHECK(m.features != unmasked.features);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t p = 0; p < m.lengths[r]; ++p)
      for (int j = 0; j < 7; ++j) {
        // Frame j of position p is frame t of the row, which position t / 2 holds at its own slot past + t % 2.
        const int64_t t = std::clamp<int64_t>(p * 2 - 3 + j, 0, m.lengths[r] * 2 - 1);
        const float* at = m.features.data() + (r * m.length + p) * F + j * bins;
        const float* own = m.features.data() + (r * m.length + t / 2) * F + (3 + t % 2) * bins;
        CHECK(std::equal(at, at + bins, own));
      }
}

TEST_CASE("speech training resumes bitwise: SpecAugment masks, the warp, dropout and the plateau rule come back") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const SpeechSet train = random_set(rng, 24, 4), valid = random_set(rng, 6, 4);
  TrainOptions opt;
  opt.schedule.lr = 3e-3f;
  opt.seed = seed;
  opt.plateau_patience = 1;
  TrainLoopSettings s;
  s.batch = 4;
  s.steps = 8;
  s.eval_every = 2;
  s.checkpoint_every = 0;
  SpeechAugmentation augmentation;
  augmentation.masks = true;
  augmentation.spec = SpecAugment{1, 2, 1, 3};
  augmentation.vtlp = 0.1;
  auto run = [&](SequenceModel& model, Trainer& trainer, int64_t steps, const std::string& path) {
    TrainLoopSettings t = s;
    t.steps = steps;
    t.checkpoint = path;
    SpeechTrainingTask task(train, valid, seed, frontend_of(train), augmentation);
    return train_model(model, trainer, task, t, nullptr);
  };
  SequenceModel straight(tiny_config(4), Device::cpu);
  straight.init_parameters(seed);
  Trainer t1(straight.params(), opt);
  CHECK(run(straight, t1, 8, tmp.file("straight.safetensors")).status == TrainStatus::finished);

  SequenceModel first(tiny_config(4), Device::cpu);
  first.init_parameters(seed);
  Trainer t2(first.params(), opt);
  const std::string path = tmp.file("half.safetensors");
  run(first, t2, 4, path);
  auto resumed = SequenceModel::load(load_safetensors(path), Device::cpu);
  Trainer t3(resumed->params(), opt);
  t3.restore(load_safetensors(path));
  CHECK(t3.lr_scale() == t2.lr_scale());
  run(*resumed, t3, 8, path);
  const std::vector<float> a = values_of(straight), b = values_of(*resumed);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(t3.lr_scale() == t1.lr_scale());
}

TEST_CASE("waveform augmentation flags: P or P:LO:HI over the defaults, anything else one line naming the flag") {
  const WaveAugmentation::Draw d{0, 0.9, 1.1};
  const WaveAugmentation::Draw a = parse_wave_draw("--speed", "0.25", d), b = parse_wave_draw("--speed", "1:0.8:1.3", d);
  CHECK(a.p == 0.25);
  CHECK(a.lo == 0.9);
  CHECK(a.hi == 1.1);
  CHECK(b.p == 1);
  CHECK(b.lo == 0.8);
  CHECK(b.hi == 1.3);
  const WaveAugmentation::Draw c = parse_wave_draw("--noise", wave_draw_text({0.3, -2.5, 17.125}), d);
  CHECK(c.p == 0.3);
  CHECK(c.lo == -2.5);
  CHECK(c.hi == 17.125);
  for (const char* bad : {"", "x", "1.5", "-0.1", "0.5:1", "0.5:1.2:0.8", "0.5:1:2:3", "0.5:nan:1", "0.5 "})
    CHECK_THROWS_WITH(parse_wave_draw("--speed", bad, d), doctest::Contains("--speed '"));
  // A set made in memory names no audio to read again.
  Rng rng(fresh_seed());
  const SpeechSet set = random_set(rng, 10, 3);
  SpeechAugmentation noisy;
  noisy.wave.noise.p = 0.5;
  CHECK_THROWS_WITH(SpeechTrainingTask(set, SpeechSet{}, 1, frontend_of(set), noisy), doctest::Contains("names none"));
}

TEST_CASE("augment_waveform applies each change with its probability, as a function of the key alone") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  std::vector<float> x(8000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(0.3 * std::sin(0.05 * double(i)) + 0.05 * rng.normal());
  const std::vector<float> other_samples(3000, 0.1f);
  int calls = 0;
  auto other = [&](uint64_t) {
    ++calls;
    return other_samples;
  };
  WaveAugmentation none;
  CHECK(augment_waveform(x, none, seed, other) == x);
  CHECK_FALSE(none.changes(seed));
  // Every change at once, twice from one key: the same samples; another key: others.
  WaveAugmentation all;
  for (WaveAugmentation::Draw* d : {&all.speed, &all.reverb, &all.noise, &all.telephone, &all.codec, &all.clip}) d->p = 1;
  const std::vector<float> y = augment_waveform(x, all, seed, other);
  CHECK(augment_waveform(x, all, seed, other) == y);
  CHECK(augment_waveform(x, all, seed + 1, other) != y);
  CHECK(all.changes(seed));
  // Speed alone, at a fixed factor: the length follows it.
  WaveAugmentation speed;
  speed.speed = {1, 1.25, 1.25};
  CHECK(augment_waveform(x, speed, seed, other) == audio::change_speed(x, 1.25));
  // At p = 0.5 each, changes() says exactly when the samples change.
  WaveAugmentation half;
  for (WaveAugmentation::Draw* d : {&half.speed, &half.reverb, &half.noise, &half.telephone, &half.clip}) d->p = 0.5;
  int changed = 0;
  for (uint64_t k = 0; k < 40; ++k) {
    const bool c = half.changes(seed + k);
    CHECK((augment_waveform(x, half, seed + k, other) != x) == c);
    changed += c;
  }
  CHECK(changed > 30);  // 1 - 0.5^5 of them
  CHECK(calls > 0);     // babble asked for other utterances
}

TEST_CASE("speech batches with waveform augmentation: a changed row is the front end of its changed audio") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  // Eight utterances of tones 0.6-1.2 s long, with phones that fit them.
  std::vector<Utterance> utts;
  for (int i = 0; i < 8; ++i) {
    const size_t n = size_t(rng.integer(9600, 19200));
    std::vector<float> x(n);
    const double hz = rng.uniform(150, 900);
    for (size_t k = 0; k < n; ++k)
      x[k] = float(0.3 * std::sin(2 * M_PI * hz * double(k) / 16000) * (0.6 + 0.4 * std::sin(double(k) / 900)));
    Utterance u;
    u.audio = dir.file("u" + std::to_string(i) + ".wav");
    write_float_wav(u.audio, x);
    u.speaker = "s";
    u.phones = {1, 2, 3};
    utts.push_back(u);
  }
  SpeechFrontEnd frontend;
  const std::vector<std::vector<float>> raw = compute_filterbanks(utts, frontend);
  frontend.set_statistics(filterbank_statistics(raw, frontend.fbank_config().bins));
  const SpeechSet set = make_speech_set(utts, raw, frontend, 1000);
  REQUIRE(set.size() == 8);
  SpeechAugmentation plain, faster;
  faster.wave.speed = {1, 1.25, 1.25};
  SpeechTrainingTask a(set, SpeechSet{}, seed, frontend, plain), b(set, SpeechSet{}, seed, frontend, faster),
      b2(set, SpeechSet{}, seed, frontend, faster);
  for (int64_t step = 0; step < 3; ++step) {
    SequenceBatch pa, pb, pb2;
    a.batch(step, 4, pa);
    b.batch(step, 4, pb);
    b2.batch(step, 4, pb2);
    CHECK(pb.features == pb2.features);  // a function of (seed, step)
    REQUIRE(pa.rows == pb.rows);
    const int64_t W = set.width;
    for (int64_t r = 0; r < pb.rows; ++r) {
      // Which utterance: the plain row's frames are the set's.
      int64_t which = -1;
      for (int64_t i = 0; i < set.size(); ++i)
        if (set.positions(i) == pa.lengths[size_t(r)] &&
            std::equal(set.inputs.begin() + set.start[i] * W, set.inputs.begin() + set.start[i + 1] * W,
                       pa.features.begin() + r * pa.length * W))
          which = i;
      REQUIRE(which >= 0);
      const std::vector<float> want =
          frontend.encoder_inputs(frontend.filterbank(audio::change_speed(read_audio(set.audio[size_t(which)]), 1.25)));
      REQUIRE(pb.lengths[size_t(r)] * W == int64_t(want.size()));
      CHECK(std::equal(want.begin(), want.end(), pb.features.begin() + r * pb.length * W));
      CHECK(pb.lengths[size_t(r)] < pa.lengths[size_t(r)]);
    }
  }
}

TEST_CASE("the plateau rule scales the learning rate after patience evaluations without a better loss") {
  Parameters p;
  p.add("w", {3});
  p.allocate(Device::cpu);
  TrainOptions opt;
  opt.schedule.lr = 0.5f;
  opt.plateau_patience = 2;
  opt.plateau_factor = 0.5f;
  Trainer trainer(p, opt);
  // Loss 1.0 (best), 1.2, 1.1 (two without gain: halve), 0.9 (best), 0.95, 0.9 (equal is no gain: halve).
  const std::vector<std::pair<double, bool>> reports = {{1.0, false}, {1.2, false}, {1.1, true},
                                                        {0.9, false}, {0.95, false}, {0.9, true}};
  float scale = 1;
  for (auto [loss, halves] : reports) {
    CHECK(trainer.report_evaluation(loss) == halves);
    if (halves) scale *= 0.5f;
    CHECK(trainer.lr_scale() == scale);
  }
  CHECK(trainer.update() == doctest::Approx(0.5f * 0.25f));
  SUBCASE("off by default") {
    Trainer plain(p, TrainOptions{});
    for (int i = 0; i < 5; ++i) CHECK_FALSE(plain.report_evaluation(1.0));
    CHECK(plain.lr_scale() == 1.f);
  }
}
