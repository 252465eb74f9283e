// Log mel filterbank features, Kaldi-style (compute-fbank-feats with its
// defaults, no dither), and what the speech models do with them: mean and
// variance normalisation with training-set statistics, SpecAugment masks,
// and stacking frames into a slower frame rate.
//
//   lt::Fbank fbank;                                   // 40 bins, 25 ms / 10 ms
//   std::vector<float> f(fbank.frames(n) * 40);
//   fbank.compute(samples, n, f.data());
//
// Per frame of frame_ms at every hop_ms (Kaldi's snip_edges: only whole frames):
//   1. remove_dc: subtract the frame's mean (Kaldi remove_dc_offset)
//   2. pre-emphasis x[i] -= 0.97 x[i-1], x[-1] = x[0] (Kaldi preemphasis_coefficient)
//   3. Povey window (1/2 - 1/2 cos(2 pi i / (N-1)))^0.85 (Kaldi's default window_type)
//   4. power spectrum of a 512-point FFT (the frame zero-padded to a power of 2: round_to_power_of_two)
//   5. bins triangular filters evenly spaced on mel = 1127 ln(1 + f / 700) from low_hz to
//      high_hz (Kaldi low_freq 20, high_freq 0 = Nyquist), over the FFT bins below Nyquist
//   6. log(max(energy, log_floor)) (Kaldi floors at FLT_EPSILON on int16-scale samples;
//      lt's samples are in [-1, 1], so energies are 2^30 smaller and every log 2 ln 32768
//      = 20.8 lower than Kaldi's; the mean normalisation removes that offset)
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace lt {

struct FbankConfig {
  int sample_rate = 16000;
  int bins = 40;             // the paper's 40 mel filters (Kaldi num_mel_bins 23)
  double frame_ms = 25;      // Kaldi frame_length
  double hop_ms = 10;        // Kaldi frame_shift
  double preemphasis = 0.97;
  double low_hz = 20, high_hz = 0;  // 0: the Nyquist frequency
  double log_floor = 1e-10;  // on energies of samples in [-1, 1]
  bool remove_dc = true;
  int64_t frame_length() const;  // samples per frame: 400 at 16 kHz
  int64_t hop() const;           // 160
  int64_t fft_size() const;      // 512
  double high_frequency() const;  // high_hz, or Nyquist when 0
};

// The mel scale of step 5, 1127 ln(1 + f / 700), and its inverse.
double hz_to_mel(double hz);
double mel_to_hz(double mel);

class Fbank {
 public:
  // Throws lt::Error on settings that cannot make filters (a band above
  // Nyquist, more bins than FFT bins, ...).
  explicit Fbank(const FbankConfig& config = {});
  ~Fbank();
  const FbankConfig& config() const { return config_; }
  int64_t frames(int64_t samples) const;  // 1 + (n - frame_length) / hop; 0 when n < frame_length
  // out [frames(n), bins]. Thread-safe (FFTW's plan is made once; each thread
  // has its own buffers); allocation-free after a thread's first call.
  void compute(const float* samples, int64_t n, float* out) const;

 private:
  struct Plan;
  FbankConfig config_;
  std::shared_ptr<const Plan> plan_;
};

// Frames of samples pushed in arbitrary pieces: identical to Fbank::compute
// over their concatenation.
class FbankStream {
 public:
  explicit FbankStream(const Fbank& fbank);
  void push(const float* samples, int64_t n, std::vector<float>& frames_out);  // appends complete frames
  int64_t frames_done() const { return frames_; }

 private:
  const Fbank& fbank_;
  std::vector<float> pending_;  // samples from the next frame's start on
  int64_t frames_ = 0;
};

// Per-bin mean and variance of training features, summed in double.
struct FeatureStats {
  int bins = 0;
  int64_t count = 0;
  std::vector<double> sum, sum_sq;
  explicit FeatureStats(int bins = 0);
  void add(const float* frames, int64_t n);  // n frames of bins
  void merge(const FeatureStats& other);
  std::vector<float> mean() const;
  std::vector<float> inv_std() const;  // 1 / sqrt(max(variance, 1e-6))
};
// frames[t][b] = (frames[t][b] - mean[b]) * inv_std[b].
void normalize_features(float* frames, int64_t n, int bins, const float* mean, const float* inv_std);

// SpecAugment's masks (Park et al. 2019, without time warping): freq_masks
// bands of up to freq_width bins and time_masks spans of up to time_width
// positions, each width and place drawn uniformly from seed, set to 0 (the
// normalised mean). Rows are stack frames of bins each (FrameWindow): a
// band masks its bins in every one of them.
struct SpecAugment {
  int freq_masks = 2, freq_width = 8, time_masks = 2, time_width = 20;
};
void spec_augment(float* rows, int64_t n, int bins, int stack, const SpecAugment& options, uint64_t seed);

// Vocal tract length perturbation (Jaitly and Hinton 2013) on log mel
// frames: the spectrum a vocal tract alpha times shorter would give,
// S'(f) = S(w(f)) with w(f) = f / alpha up to f_b = 0.8 high min(1, alpha)
// and linear from there to w(high) = high, so the band keeps its ends.
// Filter b, centred at c_b, takes the log energy at mel(w(c_b)),
// interpolated linearly between the filters' centres on the mel scale (held
// at the first and last centre beyond them). alpha > 1 moves formants up.
class MelWarp {
 public:
  MelWarp(const FbankConfig& config, double alpha);  // alpha in [0.5, 2]
  // frames [n, bins] of log mel energies (Fbank's output), in place.
  void apply(float* frames, int64_t n) const;

 private:
  int bins_;
  std::vector<int> below_;      // per filter: the centre at or below its warped place
  std::vector<float> weight_;   // and the share of the next one
};

// Which filterbank frames make encoder position p, side by side: the stack
// of k frames pk..pk+k-1 (k > 1: the x2..x4 cheaper rate), with `past`
// frames before it and `future` after it (context, Kaldi's splicing). A
// frame before the recording's first or after its last repeats that one,
// so a last partial stack repeats the last frame. A model that sees both
// sides takes context on both; a causal one only past context, or future
// context at the latency of those frames.
struct FrameWindow {
  int stack = 1, past = 0, future = 0;
  int frames() const { return past + stack + future; }  // per position
  int64_t positions(int64_t n) const;                   // of n frames: ceil(n / stack)
  // Throws lt::Error naming the bad value: stack 1..16, context 0..64.
  void validate() const;
  bool operator==(const FrameWindow& o) const { return stack == o.stack && past == o.past && future == o.future; }
};

// out [count, w.frames() * bins]: positions p0..p0+count-1 of a recording
// whose frames 0..last exist and whose frames first..first+m-1 are
// frames[0..m), bins each. Every frame those positions read must be in
// frames (after clamping to 0..last). The whole recording of n frames:
// window_frames(frames, 0, n, n - 1, bins, w, 0, w.positions(n), out).
void window_frames(const float* frames, int64_t first, int64_t m, int64_t last, int bins, const FrameWindow& w,
                   int64_t p0, int64_t count, float* out);

}  // namespace lt
