// Convolution through FFTW (single precision), for signals too long to
// convolve directly: rooms, and aligning a codec's output with its input.
#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

namespace lt::audio {

// FFTW's planner is not thread-safe (executing a finished plan is): every
// plan is made and destroyed under this lock.
std::mutex& fftw_planner_mutex();

// The full convolution of a and b: na + nb - 1 samples.
std::vector<float> fft_convolve(const float* a, size_t na, const float* b, size_t nb);

}  // namespace lt::audio
