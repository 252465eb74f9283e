// --- depthwise_conv.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// lt::depthwise_conv_forward / _backward (ops/ops.h): x, y, dy, dx [B, L, C],
// w, dw [C, K], bias, dbias [C], P of the K taps before each output's
// position; lengths int32 [B] on the device, or nullptr for all L. dw and
// dbias accumulate.
void depthwise_conv_forward(const float* x, const float* w, const float* bias, const int32_t* lengths, float* y,
                            int64_t B, int64_t L, int64_t C, int64_t K, int64_t P);
void depthwise_conv_backward(const float* x, const float* w, const int32_t* lengths, const float* dy, float* dx,
                             float* dw, float* dbias, int64_t B, int64_t L, int64_t C, int64_t K, int64_t P);
// lt::depthwise_conv_continue: x, y [B, L, C], window [R, K - 1, C] updated:
// element b continues window row rows[b] (device memory: a pool's rows,
// distinct and inside the window; -1 pads a batch-size bucket, giving
// zeros), or row b when rows is null.
void depthwise_conv_continue(const float* x, const float* w, const float* bias, float* window, float* y, int64_t B,
                             int64_t L, int64_t C, int64_t K, const int64_t* rows);
}  // namespace lt::kernels
