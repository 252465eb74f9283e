// The LSTM cell of the Bi-LSTM encoder (lib/model/bilstm.cpp), one time step
// of a batch: the gate activations, the new state and, backward, the gate
// gradients (common/lstm_gates.h, shared with the GPU). The products around
// it (x W_ih^T, h W_hh^T) are linear ops. Vectorised along the hidden units
// with simd_math: libm's tanhf and expf are scalar calls, a fifth of a
// training step when they were used here.
#include <cstring>

#include "backend/dispatch.h"
#include "common/lstm_gates.h"
#include "ops/ops.h"
#include "ops/simd_math.h"

namespace lt {
namespace {

struct SimdMath {
  static float sigmoid(float x) { return simd_math::sigmoid(x); }
  static float tanh(float x) { return simd_math::tanh(x); }
};

// The shapes of one step: returns H; W is out's width.
int64_t check_step(const Tensor& gates, const Tensor& c, const Tensor& lengths, const Tensor& out, int64_t first,
                   const char* what) {
  check(gates.ndim() == 2 && gates.dim(1) % 4 == 0 && gates.dim(1) > 0,
        std::string(what) + ": gates must be [B, 4H], got " + shape_str(gates.shape()));
  const int64_t B = gates.dim(0), H = gates.dim(1) / 4;
  check_shape(c, {B, H}, what);
  check(lengths.dtype() == DType::i32, std::string(what) + ": lengths must be int32");
  check_shape(lengths, {B}, what);
  check(out.ndim() == 2 && out.dim(0) == B && first >= 0 && first + H <= out.dim(1),
        std::string(what) + ": columns " + std::to_string(first) + ".." + std::to_string(first + H) + " of " +
            shape_str(out.shape()) + " do not fit a step of " + std::to_string(B) + " rows");
  return H;
}

}  // namespace

void lstm_cell_forward(Tensor& gates, const Tensor& rec, const Tensor& c_prev, const Tensor& lengths, int64_t t,
                       Tensor& c, Tensor& h, Tensor& out, int64_t first) {
  const int64_t H = check_step(gates, c, lengths, out, first, "lstm_cell_forward");
  const int64_t B = gates.dim(0), G = 4 * H, W = out.dim(1);
  check_shape(rec, gates.shape(), "lstm_cell_forward recurrent product");
  check_shape(c_prev, c.shape(), "lstm_cell_forward previous cell state");
  check_shape(h, c.shape(), "lstm_cell_forward hidden state");
  Device dev = common_device({&gates, &rec, &c_prev, &lengths, &c, &h, &out}, "lstm_cell_forward");
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::lstm_cell_forward(gates.data(), rec.data(), c_prev.data(), lengths.data_i32(), t, c.data(),
                                       h.data(), out.data(), W, first, B, H));

  const int32_t* len = lengths.data_i32();
  for (int64_t r = 0; r < B; ++r) {
    float *a = gates.data() + r * G, *ct = c.data() + r * H, *ht = h.data() + r * H, *o = out.data() + r * W + first;
    const float *q = rec.data() + r * G, *cp = c_prev.data() + r * H;
    if (t >= len[r]) {  // padding: a zero state, as before the row's first real step
      std::memset(ct, 0, H * sizeof(float));
      std::memset(ht, 0, H * sizeof(float));
      std::memset(o, 0, H * sizeof(float));
      continue;
    }
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      float cj, hj;
      lstm::gates_forward<SimdMath>(a, q, H, j, cp[j], cj, hj);
      ct[j] = cj;
      ht[j] = o[j] = hj;
    }
  }
}

void lstm_cell_backward(const Tensor& gates, const Tensor& c, const Tensor& c_prev, const Tensor& dh,
                        const Tensor& dout, int64_t first, const Tensor& lengths, int64_t t, Tensor& dc,
                        Tensor& dgates) {
  const int64_t H = check_step(gates, c, lengths, dout, first, "lstm_cell_backward");
  const int64_t B = gates.dim(0), G = 4 * H, W = dout.dim(1);
  check_shape(c_prev, c.shape(), "lstm_cell_backward previous cell state");
  check_shape(dh, c.shape(), "lstm_cell_backward hidden state gradient");
  check_shape(dc, c.shape(), "lstm_cell_backward cell state gradient");
  check_shape(dgates, gates.shape(), "lstm_cell_backward gate gradient");
  Device dev = common_device({&gates, &c, &c_prev, &dh, &dout, &lengths, &dc, &dgates}, "lstm_cell_backward");
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::lstm_cell_backward(gates.data(), c.data(), c_prev.data(), dh.data(), dout.data(), W, first,
                                        lengths.data_i32(), t, dc.data(), dgates.data(), B, H));

  const int32_t* len = lengths.data_i32();
  for (int64_t r = 0; r < B; ++r) {
    float *da = dgates.data() + r * G, *dcr = dc.data() + r * H;
    if (t >= len[r]) {  // padding: its state was a constant zero
      std::memset(da, 0, G * sizeof(float));
      std::memset(dcr, 0, H * sizeof(float));
      continue;
    }
    const float *a = gates.data() + r * G, *ct = c.data() + r * H, *cp = c_prev.data() + r * H;
    const float *dhr = dh.data() + r * H, *dyr = dout.data() + r * W + first;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j], tc = simd_math::tanh(ct[j]);
      lstm::gates_backward(i, f, g, o, tc, dhr[j] + dyr[j], dcr[j], cp[j], da, H, j);
    }
  }
}

}  // namespace lt
