// The waveform augmentations against their definitions: a speed factor
// recovered from a tone, a room's decay time and direct-to-reverberant ratio
// measured back, a convolution against the direct sum, noise colours by the
// slope of their spectrum, the SNR reached, the telephone band's edges,
// G.711 against its whole code table, and codecs that keep the signal aligned.
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "audio/augment.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;
using namespace lt::audio;

namespace {

std::vector<float> tone(double hz, size_t n, double amplitude = 0.5, double phase = 0) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(amplitude * std::sin(2 * M_PI * hz * double(i) / 16000 + phase));
  return x;
}

double power(const std::vector<float>& x, size_t from = 0, size_t to = 0) {
  if (to == 0) to = x.size();
  double s = 0;
  for (size_t i = from; i < to; ++i) s += double(x[i]) * x[i];
  return s / double(to - from);
}

// The frequency of a tone: its zero crossings over a stretch (away from the ends).
double frequency(const std::vector<float>& x) {
  const size_t from = x.size() / 10, to = x.size() - x.size() / 10;
  size_t first = 0, last = 0, count = 0;
  for (size_t i = from + 1; i < to; ++i)
    if (x[i - 1] < 0 && x[i] >= 0) {
      const size_t at = i;
      if (count == 0) first = at;
      last = at;
      ++count;
    }
  return double(count - 1) * 16000 / double(last - first);
}

// Power of x at hz, by correlation with a complex tone (a single DFT bin).
// The DFT at one frequency; the phasor turns by multiplication so that many bins stay cheap.
double power_at(const std::vector<float>& x, double hz) {
  const std::complex<double> turn = std::polar(1.0, -2 * M_PI * hz / 16000);
  std::complex<double> s = 0, phasor = 1;
  for (size_t i = 0; i < x.size(); ++i, phasor *= turn) s += double(x[i]) * phasor;
  return std::norm(s) / double(x.size() * x.size());
}

std::vector<float> random_signal(Rng& rng, size_t n) {
  std::vector<float> x(n);
  for (float& v : x) v = float(0.3 * rng.normal());
  return x;
}

}  // namespace

TEST_CASE("change_speed scales a tone's frequency by the factor and its length by the inverse") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int k = 0; k < 3; ++k) {
    const double factor = rng.uniform(0.8, 1.25), hz = rng.uniform(200, 1500);
    INFO("factor " << factor << " tone " << hz << " Hz");
    const std::vector<float> x = tone(hz, 32000), y = change_speed(x, factor);
    CHECK(std::abs(double(y.size()) - 32000 / factor) <= 1);
    CHECK(std::abs(frequency(y) / hz - factor) < 2e-3);
  }
  CHECK_THROWS_WITH(change_speed(tone(440, 1000), 3), doctest::Contains("speed factor"));
}

TEST_CASE("a room impulse response decays 60 dB in its rt60 with the direct-to-reverberant ratio asked for") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const double rt60 = rng.uniform(0.2, 1.2), drr = rng.uniform(-5, 10);
  INFO("rt60 " << rt60 << " drr " << drr);
  const std::vector<float> h = room_impulse_response(rt60, drr, seed);
  CHECK(h.size() == size_t(rt60 * 16000));
  CHECK(h[0] == 1.f);
  double tail = 0;
  for (size_t i = 1; i < h.size(); ++i) tail += double(h[i]) * h[i];
  CHECK(std::abs(10 * std::log10(1.0 / tail) - drr) < 1e-3);
  // Schroeder's backward integral of the tail; the slope between -5 and -35 dB, extrapolated to 60 dB.
  std::vector<double> edc(h.size() + 1, 0.0);
  for (size_t i = h.size(); i-- > 1;) edc[i] = edc[i + 1] + double(h[i]) * h[i];
  double t5 = 0, t35 = 0;
  for (size_t i = 1; i < h.size(); ++i) {
    const double db = 10 * std::log10(edc[i] / edc[1]);
    if (t5 == 0 && db <= -5) t5 = double(i) / 16000;
    if (t35 == 0 && db <= -35) t35 = double(i) / 16000;
  }
  CHECK(std::abs(2 * (t35 - t5) / rt60 - 1) < 0.1);  // T30: 30 dB of decay, times two
  // A key draws one room: the same again, another key another.
  CHECK(room_impulse_response(rt60, drr, seed) == h);
  CHECK(room_impulse_response(rt60, drr, seed + 1) != h);
}

TEST_CASE("reverberate is the convolution, cut to the input's length at the input's RMS") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::vector<float> x = random_signal(rng, size_t(rng.integer(300, 3000)));
  const std::vector<float> h = random_signal(rng, size_t(rng.integer(1, 800)));
  const std::vector<float> y = reverberate(x, h);
  REQUIRE(y.size() == x.size());
  std::vector<double> direct(x.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < h.size() && j <= i; ++j) direct[i] += double(x[i - j]) * h[j];
  double px = 0, pd = 0;
  for (size_t i = 0; i < x.size(); ++i) px += double(x[i]) * x[i], pd += direct[i] * direct[i];
  const double scale = std::sqrt(px / pd);
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (y[i] - scale * direct[i]) * (y[i] - scale * direct[i]);
    ref += scale * direct[i] * scale * direct[i];
  }
  CHECK(std::sqrt(err / ref) < 1e-5);
}

TEST_CASE("coloured noise has unit RMS and a spectrum falling as 1/f^exponent") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  for (double exponent : {0.0, 1.0, 2.0}) {
    INFO("exponent " << exponent);
    const size_t n = 1 << 16;
    const std::vector<float> x = coloured_noise(n, exponent, seed);
    CHECK(std::abs(power(x) - 1) < 1e-4);
    // Mean power in octave bands 125..250 .. 4000..8000 Hz, by averaged DFT bins; their log-log slope.
    // Each bin's power is exponentially distributed, so 64 bins leave each band's log10 a standard
    // deviation of 0.054 and the slope one of 0.043: 0.25 is 5.8 of them (16 bins gave 2.9, and failed).
    std::vector<double> lf, lp;
    for (double lo = 125; lo < 8000; lo *= 2) {
      double sum = 0;
      int bins = 0;
      for (double hz = lo; hz < 2 * lo; hz += lo / 64, ++bins) sum += power_at(x, hz);
      lf.push_back(std::log10(lo * std::sqrt(2.0)));
      lp.push_back(std::log10(sum / bins));
    }
    double mf = 0, mp = 0;
    for (size_t i = 0; i < lf.size(); ++i) mf += lf[i] / double(lf.size()), mp += lp[i] / double(lf.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < lf.size(); ++i) num += (lf[i] - mf) * (lp[i] - mp), den += (lf[i] - mf) * (lf[i] - mf);
    CHECK(std::abs(num / den + exponent) < 0.25);
  }
}

TEST_CASE("add_noise reaches the SNR asked for, repeating a short noise, and babble mixes talkers at equal level") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::vector<float> clean = random_signal(rng, 5000), noise = random_signal(rng, 1234);
  const double snr = rng.uniform(-5, 30);
  std::vector<float> x = clean;
  add_noise(x, noise, snr);
  std::vector<double> added(x.size());
  double pn = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    added[i] = double(x[i]) - clean[i];
    pn += added[i] * added[i];
  }
  CHECK(std::abs(10 * std::log10(power(clean) * double(x.size()) / pn) - snr) < 1e-3);
  // The noise is repeated: sample i and i + 1234 got the same.
  CHECK(std::abs(added[10] - added[10 + 1234]) < 1e-6);
  const std::vector<float> a = random_signal(rng, 700), b = tone(300, 900, 2.0);
  const std::vector<float> crowd = babble({a, b}, 2100);
  REQUIRE(crowd.size() == 2100);
  // Each at unit RMS over the 2100 samples it fills.
  std::vector<float> ta(2100), tb(2100);
  for (size_t i = 0; i < 2100; ++i) ta[i] = a[i % 700], tb[i] = b[i % 900];
  const double ra = std::sqrt(power(ta)), rb = std::sqrt(power(tb));
  for (size_t i : {size_t(0), size_t(699), size_t(1500), size_t(2099)})
    CHECK(std::abs(crowd[i] - (a[i % 700] / ra + b[i % 900] / rb)) < 1e-5);
}

TEST_CASE("the telephone band passes 1 kHz, cuts 5 kHz and attenuates 100 Hz as a 300 Hz high-pass does") {
  const size_t n = 16000;
  auto gain_db = [&](double hz) {
    const std::vector<float> x = tone(hz, n), y = telephone_band(x);
    REQUIRE(y.size() == n);
    return 10 * std::log10(power(y, n / 4, n) / power(x, n / 4, n));  // after the filters settle
  };
  CHECK(std::abs(gain_db(1000)) < 0.5);
  CHECK(gain_db(5000) < -60);
  // A second-order Butterworth high-pass at 300 Hz: |H(100 Hz)|^2 = 1 / (1 + (300/100)^4).
  CHECK(std::abs(gain_db(100) - 10 * std::log10(1 / (1 + 81.0))) < 1.0);
  CHECK(std::abs(gain_db(300) + 3) < 0.5);
}

TEST_CASE("G.711 mu-law and A-law: segments of doubling steps decoded at their middles, 255 and 256 values") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool mu : {true, false}) {
    INFO("law " << (mu ? "mu" : "A"));
    // Every 16-bit input: a non-decreasing, odd staircase of 255 (mu-law's
    // two zeros decode alike) or 256 values, full scale at 32124 or 32256.
    std::vector<float> sweep(65536);
    for (int i = 0; i < 65536; ++i) sweep[size_t(i)] = float((i - 32768) / 32768.0);
    std::vector<float> y = sweep;
    mu ? mu_law(y) : a_law(y);
    CHECK(std::is_sorted(y.begin(), y.end()));
    std::vector<float> values = y;
    values.erase(std::unique(values.begin(), values.end()), values.end());
    CHECK(values.size() == (mu ? 255u : 256u));
    CHECK(values.back() * 32768 == (mu ? 32124.f : 32256.f));
    CHECK(values.front() == -values.back());
    // Random samples: within half a step of the segment they decode in (plus
    // the 2 or 3 bits the encoder drops first): steps of 8 << s units (mu-law,
    // from 132 (2^s - 1)) or 16 << s (A-law, from 264 2^(s-1)).
    for (int k = 0; k < 2000; ++k) {
      const float x = float(rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-3.5, 0)) * 0.98);
      std::vector<float> one{x};
      mu ? mu_law(one) : a_law(one);
      const double out = std::abs(double(one[0])) * 32768;
      const double step = mu ? 8 << int(std::floor(std::log2((out + 132) / 132)))
                             : out < 264 ? 16 : 16 << int(std::floor(std::log2(out / 264)));
      CHECK(std::abs(double(one[0]) - x) * 32768 <= step / 2 + (mu ? 4 : 8) + 0.5);
    }
  }
}

TEST_CASE("gain_and_clip amplifies by the gain in dB and clips at the level") {
  std::vector<float> x{0.1f, -0.2f, 0.5f, -0.9f};
  gain_and_clip(x, 6.0206, 0.7);  // x 2
  CHECK(std::abs(x[0] - 0.2f) < 1e-5);
  CHECK(std::abs(x[1] + 0.4f) < 1e-5);
  CHECK(x[2] == doctest::Approx(0.7));
  CHECK(x[3] == doctest::Approx(-0.7));
}

TEST_CASE("codecs in memory keep the signal's length and alignment, and change it as a lossy codec does") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Speech-like: a few tones under a syllable-rate envelope, and a sweep,
  // whose changing pitch repeats at no lag: with tones alone, a codec that
  // keeps mostly one of them (Opus at its lowest rate) correlates as well a
  // whole period away.
  const size_t n = 24000;
  std::vector<float> x(n, 0.f);
  for (int k = 0; k < 4; ++k) {
    const std::vector<float> t = tone(rng.uniform(150, 3000), n, 0.1, rng.uniform(0, 6.28));
    for (size_t i = 0; i < n; ++i) x[i] += t[i] * float(0.6 + 0.4 * std::sin(2 * M_PI * 4 * double(i) / 16000));
  }
  const double f0 = rng.uniform(200, 500), f1 = rng.uniform(1500, 2500), seconds = double(n) / 16000;
  for (size_t i = 0; i < n; ++i) {
    const double t = double(i) / 16000;
    x[i] += float(0.2 * std::sin(2 * M_PI * (f0 * t + (f1 - f0) * t * t / (2 * seconds))));
  }
  for (Codec c : {Codec::gsm, Codec::mp3, Codec::opus}) {
    INFO("codec " << int(c));
    const std::vector<float> y = codec_round_trip(x, c);
    REQUIRE(y.size() == n);
    // Aligned: y correlates with x best within a sample of lag 0 (a codec's
    // own delay taken out, to the nearest sample of a delay that may fall
    // between two); lossy: it is not x.
    auto correlation = [&](long lag) {
      double xy = 0, xx = 0, yy = 0;
      for (size_t i = n / 8; i < n - n / 8; ++i) {
        const double a = x[i], b = y[size_t(long(i) + lag)];
        xy += a * b, xx += a * a, yy += b * b;
      }
      return xy / std::sqrt(xx * yy);
    };
    const double at_zero = correlation(0);
    INFO("correlation at lag 0: " << at_zero);
    CHECK(at_zero > 0.3);  // Opus at its lowest rate keeps 0.45-0.95 of these tones
    long best = 0;
    for (long lag = -40; lag <= 40; ++lag)
      if (correlation(lag) > correlation(best)) best = lag;
    CHECK(std::abs(best) <= 1);
    CHECK(at_zero < 0.99999);
  }
}
