// Constants that the CPU code and the CUDA kernels must agree on, here so
// that kernels/ need include nothing of lib/ but lib/common/.
#pragma once

namespace lt {

// eps of layernorm's variance, as PyTorch's default.
constexpr float kLayerNormEps = 1e-5f;
// eps of linear attention's normaliser, as the reference implementation.
constexpr float kLinearAttentionEps = 1e-6f;

// What the fused recurrent step (linear_attention_step_packed) may apply
// itself as it reads q and k; none makes it call forward() in a pass of its own.
enum class Elementwise { none, elu_plus_one, relu };

}  // namespace lt
