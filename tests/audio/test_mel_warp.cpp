// Vocal tract length perturbation: against the warp's definition in float64
// on features that are a known function of the mel scale, against the
// filterbank of a tone at alpha times its frequency, and through the front
// end's normalisation.
#include <algorithm>
#include <cmath>

#include "audio/fbank.h"
#include "speech/speech_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// A pure tone's filterbank frames [frames, bins].
std::vector<float> tone_frames(double hz, const Fbank& fbank, int64_t& frames) {
  std::vector<float> x(8000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(0.5 * std::sin(2 * M_PI * hz * double(i) / 16000));
  frames = fbank.frames(int64_t(x.size()));
  std::vector<float> out(size_t(frames * fbank.config().bins));
  fbank.compute(x.data(), int64_t(x.size()), out.data());
  return out;
}

// The energy-weighted centre, in bins, of the tone's peak (3 bins).
double peak_place(const float* frame, int bins) {
  const int p = int(std::max_element(frame, frame + bins) - frame);
  double sum = 0, weighted = 0;
  for (int b = std::max(0, p - 1); b <= std::min(bins - 1, p + 1); ++b) {
    const double e = std::exp(double(frame[b]));
    sum += e;
    weighted += e * b;
  }
  return weighted / sum;
}

}  // namespace

TEST_CASE("mel warp: each bin reads its centre's warped frequency, interpolated between centres") {
  Rng rng(fresh_seed());
  FbankConfig c;
  c.bins = int(rng.integer(20, 60));
  const double lo = 1127 * std::log(1 + 20 / 700.0), hi = 1127 * std::log(1 + 8000 / 700.0);
  const double delta = (hi - lo) / (c.bins + 1);
  for (double alpha : {1.0, rng.uniform(0.85, 0.99), rng.uniform(1.01, 1.15), 0.5, 2.0}) {
    INFO("alpha " << alpha << ", " << c.bins << " bins");
    // Frames that are quadratic in a bin's centre (mel units): the warp reads
    // the quadratic between centres, linearly interpolated.
    const double a = rng.uniform(-3, 3), b = rng.uniform(-1, 1), q = rng.uniform(-1, 1) / (c.bins * c.bins);
    auto value = [&](double place) { return a + b * place + q * place * place; };
    std::vector<float> frames(size_t(2 * c.bins));
    for (int t = 0; t < 2; ++t)
      for (int k = 0; k < c.bins; ++k) frames[size_t(t * c.bins + k)] = float(value(k) + t);
    MelWarp(c, alpha).apply(frames.data(), 2);
    const double f_b = 0.8 * 8000 * std::min(1.0, alpha);
    for (int k = 0; k < c.bins; ++k) {
      const double centre = 700 * (std::exp((lo + (k + 1) * delta) / 1127) - 1);
      const double w = centre <= f_b ? centre / alpha : f_b / alpha + (centre - f_b) * (8000 - f_b / alpha) / (8000 - f_b);
      const double place = std::clamp((1127 * std::log(1 + w / 700) - lo) / delta - 1, 0.0, double(c.bins - 1));
      const int below = std::min(int(place), c.bins - 2);
      const double want = value(below) + (place - below) * (value(below + 1) - value(below));
      CHECK(frames[size_t(k)] == doctest::Approx(want).epsilon(1e-5).scale(1));
      CHECK(frames[size_t(c.bins + k)] == doctest::Approx(want + 1).epsilon(1e-5).scale(1));
      if (alpha == 1.0) CHECK(frames[size_t(k)] == doctest::Approx(value(k)).epsilon(1e-5).scale(1));
    }
  }
  CHECK_THROWS_AS(MelWarp(c, 0.4), Error);
  CHECK_THROWS_AS(MelWarp(c, 2.1), Error);
}

TEST_CASE("mel warp by alpha moves a tone's filterbank peak to that of a tone alpha times higher") {
  Rng rng(fresh_seed());
  const Fbank fbank;
  const int bins = fbank.config().bins;
  for (int trial = 0; trial < 6; ++trial) {
    const double hz = rng.uniform(500, 3000), alpha = trial % 2 ? rng.uniform(0.8, 0.87) : rng.uniform(1.15, 1.25);
    INFO(hz << " Hz, alpha " << alpha);
    int64_t n = 0, m = 0;
    std::vector<float> warped = tone_frames(hz, fbank, n);
    const double before = peak_place(warped.data() + 10 * bins, bins);
    MelWarp(fbank.config(), alpha).apply(warped.data(), n);
    const double got = peak_place(warped.data() + 10 * bins, bins);
    const double want = peak_place(tone_frames(hz * alpha, fbank, m).data() + 10 * bins, bins);
    // The peak moves as the tone's would (0.6 to 3 bins here), within a
    // quarter of the move: a log spectrum read between filter centres is
    // not a filter's response, so the places differ a little.
    CHECK(std::abs(want - before) > 0.5);
    CHECK(std::abs(got - want) < 0.25 * std::abs(want - before));
  }
}

TEST_CASE("the front end warps normalised frames as the log energies they stand for") {
  Rng rng(fresh_seed());
  SpeechFrontEnd frontend(FbankConfig{});
  const int bins = 40;
  FeatureStats stats(bins);
  std::vector<float> raw(size_t(50 * bins));
  for (float& v : raw) v = float(rng.uniform(-12, 2));
  stats.add(raw.data(), 50);
  frontend.set_statistics(stats);
  const double alpha = rng.uniform(0.9, 1.1);
  std::vector<float> normalised = raw, want = raw;
  frontend.normalize(normalised.data(), 50);
  frontend.warp_normalized(normalised.data(), 50, alpha);
  MelWarp(frontend.fbank_config(), alpha).apply(want.data(), 50);
  frontend.normalize(want.data(), 50);
  for (size_t i = 0; i < want.size(); ++i) CHECK(normalised[i] == doctest::Approx(want[i]).epsilon(1e-4).scale(1));
}
