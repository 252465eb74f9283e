// The LSTM cell's per-unit math (PyTorch's gate order i, f, g, o), once for
// the CPU (lib/ops/lstm_cell.cpp, vectorised along the hidden units) and the
// GPU (kernels/lstm_cell.cu, a thread per unit). Each side brings its own
// sigmoid and tanh as Math::sigmoid / Math::tanh: the CPU's straight-line
// simd_math, the GPU's expf / tanhf. A row's four gates lie H apart; unit j
// of a row is what both sides call these for. The values a function reads
// late are references, so that each side's loads keep their order.
#pragma once
#include "common/host_device.h"

namespace lt::lstm {

// In: a, the row's gate pre-activations (x W_ih^T + b), and q, its recurrent
// product (h W_hh^T); the unit's previous cell state. Out: a holds the gates'
// activations, c and h the new cell and hidden states.
template <class Math, class Index>
LT_HOST_DEVICE inline void gates_forward(float* a, const float* q, Index H, Index j, const float& c_prev, float& c,
                                         float& h) {
  const float i = Math::sigmoid(a[j] + q[j]), f = Math::sigmoid(a[H + j] + q[H + j]);
  const float g = Math::tanh(a[2 * H + j] + q[2 * H + j]), o = Math::sigmoid(a[3 * H + j] + q[3 * H + j]);
  a[j] = i, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;
  c = f * c_prev + i * g;
  h = o * Math::tanh(c);
}

// In: the forward's activations i, f, g, o, tanh of its cell state (tc), dh
// (what reaches h from the next step and from the output), dc (what reaches
// c from the next step), the previous cell state. Out: da, the row's
// pre-activation gradients; dc becomes what reaches the previous cell state.
template <class Index>
LT_HOST_DEVICE inline void gates_backward(float i, float f, float g, float o, float tc, float dh, float& dc,
                                          const float& c_prev, float* da, Index H, Index j) {
  const float dct = dc + dh * o * (1.f - tc * tc);
  da[j] = dct * g * i * (1.f - i);
  da[H + j] = dct * c_prev * f * (1.f - f);
  da[2 * H + j] = dct * i * (1.f - g * g);
  da[3 * H + j] = dh * tc * o * (1.f - o);
  dc = dct * f;
}

}  // namespace lt::lstm
