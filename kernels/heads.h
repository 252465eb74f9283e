// --- heads.cu --- output heads (heads/heads.h): losses, gradients and samplers.
#pragma once
#include <cstdint>

namespace lt::kernels {
// Mixture of logistics, params [rows, 3K]. forward writes nll [rows] and returns
// its sum (double); both passes throw lt::Error on a target outside 0..255.
double mol_loss_forward(const float* params, const int32_t* targets, float* nll, int64_t rows,
                        int64_t K);
// dparams = scale * d(sum nll) / d params (overwritten).
void mol_loss_backward(const float* params, const int32_t* targets, float scale, float* dparams,
                       int64_t rows, int64_t K);
void mol_sample(const float* params, uint64_t seed, int64_t step, int32_t* out, int64_t rows,
                int64_t K);

// Categorical, logits [rows, V]; same conventions (targets in 0..V-1).
double categorical_loss_forward(const float* logits, const int32_t* targets, float* nll,
                                int64_t rows, int64_t V);
void categorical_loss_backward(const float* logits, const int32_t* targets, float scale,
                               float* dlogits, int64_t rows, int64_t V);
void categorical_sample(const float* logits, uint64_t seed, int64_t step, int32_t* out,
                        int64_t rows, int64_t V);
}  // namespace lt::kernels
