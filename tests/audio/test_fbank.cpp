// The filterbank against an independent float64 computation (a direct DFT
// and mel filters from the formula) on synthesized speech, sines and noise;
// streaming against whole; normalisation statistics, SpecAugment and frame
// stacking against naive loops.
#include <cstdlib>
#include <set>

#include "audio/audio_file.h"
#include "audio/fbank.h"
#include "io/temp_dir.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// Kaldi's recipe (audio/fbank.h) in float64 with an O(N^2) DFT.
std::vector<double> reference_fbank(const std::vector<float>& x, const FbankConfig& c) {
  const int64_t L = 400, hop = 160, N = 512, bins = c.bins;
  const int64_t frames = int64_t(x.size()) < L ? 0 : 1 + (int64_t(x.size()) - L) / hop;
  auto mel = [](double f) { return 1127.0 * std::log(1.0 + f / 700.0); };
  const double lo = mel(20), hi = mel(8000), delta = (hi - lo) / (bins + 1);
  std::vector<double> out;
  std::vector<double> frame(static_cast<size_t>(N));
  for (int64_t t = 0; t < frames; ++t) {
    double mean = 0;
    for (int64_t i = 0; i < L; ++i) mean += x[size_t(t * hop + i)];
    mean /= L;
    std::fill(frame.begin(), frame.end(), 0.0);
    for (int64_t i = 0; i < L; ++i) frame[size_t(i)] = x[size_t(t * hop + i)] - mean;
    for (int64_t i = L - 1; i > 0; --i) frame[size_t(i)] -= 0.97 * frame[size_t(i - 1)];
    frame[0] -= 0.97 * frame[0];
    for (int64_t i = 0; i < L; ++i) frame[size_t(i)] *= std::pow(0.5 - 0.5 * std::cos(2 * M_PI * i / (L - 1)), 0.85);
    std::vector<double> power(static_cast<size_t>(N / 2));
    for (int64_t k = 0; k < N / 2; ++k) {
      double re = 0, im = 0;
      for (int64_t i = 0; i < N; ++i) {
        re += frame[size_t(i)] * std::cos(2 * M_PI * double(k * i) / N);
        im -= frame[size_t(i)] * std::sin(2 * M_PI * double(k * i) / N);
      }
      power[size_t(k)] = re * re + im * im;
    }
    for (int64_t b = 0; b < bins; ++b) {
      const double left = lo + b * delta, center = left + delta, right = center + delta;
      double e = 0;
      for (int64_t k = 0; k < N / 2; ++k) {
        const double m = mel(k * 16000.0 / N);
        if (m > left && m < right) e += power[size_t(k)] * (m <= center ? (m - left) / delta : (right - m) / delta);
      }
      out.push_back(std::log(std::max(e, 1e-10)));
    }
  }
  return out;
}

std::vector<float> fbank_of(const Fbank& f, const std::vector<float>& x) {
  std::vector<float> out(size_t(f.frames(int64_t(x.size())) * f.config().bins));
  f.compute(x.data(), int64_t(x.size()), out.data());
  return out;
}

}  // namespace

TEST_CASE("fbank equals a float64 direct-DFT computation on synthesized speech, sines and noise") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  Fbank fbank;
  CHECK(fbank.config().frame_length() == 400);
  CHECK(fbank.config().hop() == 160);
  CHECK(fbank.config().fft_size() == 512);
  // Real speech from espeak-ng (22.05 kHz, resampled by read_audio); a sine; white noise.
  const std::string wav = tmp.file("speech.wav");
  REQUIRE(std::system(("espeak-ng -w '" + wav + "' 'the quick brown fox jumps over the lazy dog' 2>/dev/null").c_str()) == 0);
  std::vector<float> speech = read_audio(wav);
  speech.resize(std::min<size_t>(speech.size(), 16000));  // the reference's DFT is O(N^2)
  std::vector<float> sine(4000), noise = rng.normals(4000, 0.1);
  const double hz = rng.uniform(300, 6000), phase = rng.uniform(0, 6);
  for (size_t i = 0; i < sine.size(); ++i) sine[i] = float(0.5 * std::sin(2 * M_PI * hz * double(i) / 16000 + phase));
  for (const auto* x : {&speech, &sine, &noise}) {
    const std::vector<float> got = fbank_of(fbank, *x);
    const std::vector<double> want = reference_fbank(*x, fbank.config());
    REQUIRE(got.size() == want.size());
    REQUIRE(!got.empty());
    // Bins within 60 dB of their frame's loudest: further down (a pure
    // sine's distant filters see only window sidelobes, ~1e-10 of the peak)
    // float32 FFT rounding, as in Kaldi's own float FFT, is all there is.
    std::vector<float> g;
    std::vector<double> w;
    for (size_t f = 0; f < got.size() / 40; ++f) {
      const double top = *std::max_element(want.begin() + long(f * 40), want.begin() + long(f * 40 + 40));
      for (size_t b = f * 40; b < f * 40 + 40; ++b)
        if (want[b] > top - std::log(1e6)) {
          g.push_back(got[b]);
          w.push_back(want[b]);
        }
    }
    REQUIRE(g.size() >= got.size() / 40 * 3);  // the peak and its neighbours at least
    CHECK(rel_error(g, w) < 3e-5);
  }
  SUBCASE("a sine's energy peaks in the filter around its frequency") {
    const std::vector<float> f = fbank_of(fbank, sine);
    auto mel = [](double v) { return 1127.0 * std::log(1.0 + v / 700.0); };
    const double delta = (mel(8000) - mel(20)) / 41;
    const int expected = int(std::lround((mel(hz) - mel(20)) / delta)) - 1;  // the filter centred nearest
    for (int64_t t = 0; t < fbank.frames(4000); ++t) {
      const float* row = &f[size_t(t * 40)];
      const int peak = int(std::max_element(row, row + 40) - row);
      CHECK(std::abs(peak - expected) <= 1);
    }
  }
}

TEST_CASE("fbank: frames from a stream in random pieces equal the whole signal's") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Fbank fbank;
  const std::vector<float> x = rng.normals(int64_t(rng.integer(3000, 9000)), 0.2);
  CHECK(fbank.frames(399) == 0);
  CHECK(fbank.frames(400) == 1);
  CHECK(fbank.frames(int64_t(x.size())) == 1 + (int64_t(x.size()) - 400) / 160);
  const std::vector<float> whole = fbank_of(fbank, x);
  FbankStream stream(fbank);
  std::vector<float> got;
  for (size_t at = 0; at < x.size();) {
    const size_t n = std::min(x.size() - at, size_t(rng.integer(1, 700)));
    stream.push(x.data() + at, int64_t(n), got);
    at += n;
  }
  CHECK(stream.frames_done() == fbank.frames(int64_t(x.size())));
  CHECK(got == whole);
}

TEST_CASE("feature statistics match float64 brute force, merge equals adding the union, and normalise") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int bins = 5;
  const std::vector<float> a = rng.normals(30 * bins, 3), b = rng.normals(20 * bins, 2);
  FeatureStats sa(bins), sb(bins), all(bins);
  sa.add(a.data(), 30);
  sb.add(b.data(), 20);
  all.add(a.data(), 30);
  all.add(b.data(), 20);
  sa.merge(sb);
  CHECK(sa.count == 50);
  std::vector<float> joined = a;
  joined.insert(joined.end(), b.begin(), b.end());
  for (int k = 0; k < bins; ++k) {
    double m = 0, v = 0;
    for (int64_t t = 0; t < 50; ++t) m += joined[size_t(t * bins + k)];
    m /= 50;
    for (int64_t t = 0; t < 50; ++t) v += (joined[size_t(t * bins + k)] - m) * (joined[size_t(t * bins + k)] - m);
    v /= 50;
    CHECK(sa.mean()[size_t(k)] == doctest::Approx(m).epsilon(1e-6));
    CHECK(sa.inv_std()[size_t(k)] == doctest::Approx(1 / std::sqrt(v)).epsilon(1e-5));
    CHECK(sa.mean()[size_t(k)] == all.mean()[size_t(k)]);
  }
  std::vector<float> x = joined;
  normalize_features(x.data(), 50, bins, sa.mean().data(), sa.inv_std().data());
  FeatureStats after(bins);
  after.add(x.data(), 50);
  for (int k = 0; k < bins; ++k) {
    CHECK(std::abs(after.mean()[size_t(k)]) < 1e-5);
    CHECK(after.inv_std()[size_t(k)] == doctest::Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("SpecAugment masks bands in every stacked frame and spans of positions, drawn from the seed") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int bins = 10, stack = 3, n = 50;
  const std::vector<float> x = rng.normals(n * bins * stack);
  const SpecAugment o{2, 4, 2, 7};
  std::vector<float> a = x, b = x, c = x;
  spec_augment(a.data(), n, bins, stack, o, 11);
  spec_augment(b.data(), n, bins, stack, o, 11);
  spec_augment(c.data(), n, bins, stack, o, 12);
  CHECK(a == b);
  // Masked bins are the same in each stacked frame; zeroed positions are whole rows.
  std::set<int> masked_bins;
  int masked_rows = 0;
  for (int t = 0; t < n; ++t) {
    bool whole_row = true;
    for (int i = 0; i < bins * stack; ++i) whole_row &= a[size_t(t * bins * stack + i)] == 0.f;
    masked_rows += whole_row;
    if (whole_row) continue;
    for (int i = 0; i < bins * stack; ++i) {
      if (a[size_t(t * bins * stack + i)] != 0.f) {
        CHECK(a[size_t(t * bins * stack + i)] == x[size_t(t * bins * stack + i)]);
        continue;
      }
      masked_bins.insert(i % bins);
      for (int j = 0; j < stack; ++j) CHECK(a[size_t(t * bins * stack + j * bins + i % bins)] == 0.f);
    }
  }
  CHECK(int(masked_bins.size()) <= 2 * 4);
  CHECK(masked_rows <= 2 * 7);
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != c[i];
  CHECK(differ > 0);  // another seed, other masks (almost surely)
}

TEST_CASE("a frame window stacks k frames with context on each side, repeating the first and last frame beyond the ends") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    const FrameWindow w{int(rng.integer(1, 4)), int(rng.integer(0, 5)), int(rng.integer(0, 5))};
    const int bins = int(rng.integer(1, 4));
    const int64_t n = rng.integer(1, 30);
    INFO("stack " << w.stack << " past " << w.past << " future " << w.future << " frames " << n);
    const std::vector<float> x = rng.normals(n * bins);
    const int64_t P = w.positions(n);
    CHECK(P == (n + w.stack - 1) / w.stack);
    std::vector<float> out(size_t(P * w.frames() * bins));
    window_frames(x.data(), 0, n, n - 1, bins, w, 0, P, out.data());
    // Position p holds frames pk - past .. pk + k - 1 + future, each clamped to the recording.
    for (int64_t p = 0; p < P; ++p)
      for (int j = 0; j < w.frames(); ++j) {
        const int64_t t = std::min(std::max<int64_t>(p * w.stack - w.past + j, 0), n - 1);
        for (int b = 0; b < bins; ++b)
          CHECK(out[size_t((p * w.frames() + j) * bins + b)] == x[size_t(t * bins + b)]);
      }
    // A range of positions from only the frames it reads gives the same rows.
    const int64_t p0 = rng.integer(0, P - 1), count = rng.integer(1, P - p0);
    const int64_t first = std::max<int64_t>(0, std::min(p0 * w.stack - w.past, n - 1));
    const int64_t end = std::min(n, (p0 + count) * w.stack + w.future);
    std::vector<float> part(size_t(count * w.frames() * bins));
    window_frames(x.data() + first * bins, first, end - first, n - 1, bins, w, p0, count, part.data());
    CHECK(std::equal(part.begin(), part.end(), out.begin() + p0 * w.frames() * bins));
    if (first > 0) CHECK_THROWS_AS(window_frames(x.data() + bins, first + 1, end - first - 1, n - 1, bins, w, p0, count,
                                                 part.data()), Error);
  }
  CHECK_THROWS_WITH_AS(FrameWindow({2, 65, 0}).validate(), doctest::Contains("outside 0..64"), Error);
  CHECK_THROWS_WITH_AS(FrameWindow({0, 1, 1}).validate(), doctest::Contains("frame stack 0 outside 1..16"), Error);
}
