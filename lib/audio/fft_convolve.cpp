#include "audio/fft_convolve.h"

#include <fftw3.h>

#include <algorithm>
#include <complex>

namespace lt::audio {

std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

std::vector<float> fft_convolve(const float* a, size_t na, const float* b, size_t nb) {
  if (na == 0 || nb == 0) return {};
  size_t size = 1;
  while (size < na + nb - 1) size *= 2;
  const size_t bins = size / 2 + 1;
  float* ra = fftwf_alloc_real(size);
  float* rb = fftwf_alloc_real(size);
  fftwf_complex* fa = fftwf_alloc_complex(bins);
  fftwf_complex* fb = fftwf_alloc_complex(bins);
  std::fill(ra, ra + size, 0.f);
  std::fill(rb, rb + size, 0.f);
  std::copy(a, a + na, ra);
  std::copy(b, b + nb, rb);
  fftwf_plan pa, pb, back;
  {
    // FFTW_ESTIMATE: a size is convolved once or twice, so planning must cost nothing.
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    pa = fftwf_plan_dft_r2c_1d(int(size), ra, fa, FFTW_ESTIMATE);
    pb = fftwf_plan_dft_r2c_1d(int(size), rb, fb, FFTW_ESTIMATE);
    back = fftwf_plan_dft_c2r_1d(int(size), fa, ra, FFTW_ESTIMATE);
  }
  fftwf_execute(pa);
  fftwf_execute(pb);
  for (size_t i = 0; i < bins; ++i) {
    const std::complex<float> p = std::complex<float>(fa[i][0], fa[i][1]) * std::complex<float>(fb[i][0], fb[i][1]);
    fa[i][0] = p.real(), fa[i][1] = p.imag();
  }
  fftwf_execute(back);
  std::vector<float> y(na + nb - 1);
  for (size_t i = 0; i < y.size(); ++i) y[i] = ra[i] / float(size);
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    for (fftwf_plan p : {pa, pb, back}) fftwf_destroy_plan(p);
  }
  fftwf_free(ra), fftwf_free(rb), fftwf_free(fa), fftwf_free(fb);
  return y;
}

}  // namespace lt::audio
