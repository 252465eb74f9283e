// S = Fk^T V and Z = Fk^T 1 per (n, h): one sgemm each on strided views.
#include <vector>

#include "backend/cpu_blas.h"
#include "backend/dispatch.h"
#include "core/bf16.h"
#include "lt/attention.h"

namespace lt {

void linear_attention_state(const Tensor& fk, const Tensor& v, Tensor& S, Tensor& Z) {
  check(fk.ndim() == 4 && v.ndim() == 4 && fk.dim(0) == v.dim(0) && fk.dim(1) == v.dim(1) &&
            fk.dim(2) == v.dim(2),
        "linear_attention_state: keys " + shape_str(fk.shape()) + " and values " + shape_str(v.shape()) +
            " must be [N, L, H, F] and [N, L, H, M]");
  const int64_t N = fk.dim(0), L = fk.dim(1), H = fk.dim(2), F = fk.dim(3), M = v.dim(3);
  check_shape(S, {N, H, F, M}, "linear_attention_state S");
  check_shape(Z, {N, H, F}, "linear_attention_state Z");
  Device dev = common_device({&fk, &v, &S, &Z}, "linear_attention_state");
  const bool bf16 = S.dtype() == DType::bf16;
  if (dev == Device::cuda && bf16)
    LT_ON_CUDA(cuda::linear_attention_state_bf16(fk.data(), v.data(), S.data_bf16(), Z.data(), N, L, H, F, M));
  if (dev == Device::cuda) LT_ON_CUDA(cuda::linear_attention_state(fk.data(), v.data(), S.data(), Z.data(), N, L, H, F, M));

  const float* K = fk.data();
  const float* Vp = v.data();
  float* Sp = bf16 ? nullptr : S.data();
  uint16_t* Sb = bf16 ? S.data_bf16() : nullptr;
  float* Zp = Z.data();
  cpu::SingleThreadedBlas single;
#pragma omp parallel
  {
    std::vector<float> sums(bf16 ? F * M : 0);  // one (n, h)'s S before rounding
#pragma omp for schedule(static)
    for (int64_t nh = 0; nh < N * H; ++nh) {
      const int64_t n = nh / H, h = nh % H;
      const float* k = K + (n * L * H + h) * F;
      const float* vv = Vp + (n * L * H + h) * M;
      float* s = bf16 ? sums.data() : Sp + nh * F * M;
      if (L > 0)
        cpu::sgemm(true, false, F, M, L, 1.f, k, H * F, vv, H * M, 0.f, s, M);
      else
        std::fill(s, s + F * M, 0.f);
      if (bf16)
        for (int64_t i = 0; i < F * M; ++i) Sb[nh * F * M + i] = float_to_bf16(s[i]);
      float* z = Zp + nh * F;
      std::fill(z, z + F, 0.f);
      for (int64_t l = 0; l < L; ++l)
        for (int64_t f = 0; f < F; ++f) z[f] += k[l * H * F + f];
    }
  }
}

}  // namespace lt
