// --- ctc.cu --- CTC loss (heads/ctc.h) on the GPU.
#pragma once
#include <cstdint>

namespace lt::kernels {
// logits [B, T, C] on the device; frames [B], labels and offsets [B + 1] on the
// host (copied over). forward writes nll [B] on the device and returns its sum.
double ctc_loss_forward(const float* logits, const int32_t* frames, const int32_t* labels, const int64_t* offsets,
                        float* nll, int64_t B, int64_t T, int64_t C);
// dlogits [B, T, C] = scale[b] (host) x (softmax - posterior occupancy), zero past frames[b].
void ctc_loss_backward(const float* logits, const int32_t* frames, const int32_t* labels, const int64_t* offsets,
                       const float* scale, float* dlogits, int64_t B, int64_t T, int64_t C);
}  // namespace lt::kernels
