// The causal product out_t = sum_{j<=t} (a_t . b_j) c_j (reverse: j >= t) has
// two CUDA forms: an RNN over positions in fp32 (causal_linear_attention.cu)
// and chunks on the tensor cores in TF32 (causal_product_chunks.cu). What
// both read: the operands, the sequences' lengths, the state to start from.
#pragma once
#include <cstdint>

namespace lt::kernels {

// A [N, L, H, width] tensor, read with an extra column of ones at index width
// when ones is set (the augmented values v'). Columns beyond read as 0.
struct Operand {
  const float* data;
  int width;
  bool ones;
  int logical_width() const { return width + (ones ? 1 : 0); }
  __device__ float at(long long row, int col) const {
    if (col < width) return data[row * width + col];
    return ones && col == width ? 1.f : 0.f;
  }
};

// The length of sequence n: lengths[n] clamped to [0, L], or L without lengths.
__device__ inline long long sequence_length(const int32_t* lengths, long long n, long long L) {
  return lengths ? min(max((long long)lengths[n], 0LL), L) : L;
}

// Where a causal product starts and ends: the padded batch's lengths (device,
// or nullptr), and an optional state [pairs, inner, out_width] to start from
// (init) and to receive the state after the sequence (final; may be init).
struct ProductState {
  const int32_t* lengths = nullptr;
  const float* init = nullptr;
  float* final_state = nullptr;
};

// In place over each pair's S segment sums [pairs, S, FM]: the exclusive
// prefix, the state each segment starts from (in processing order), plus
// init [pairs, FM] when set.
void scan_segments(float* seg, const float* init, int64_t pairs, int S, int64_t FM);

// out[:, :out_width] of the causal (or reverse) product from a zero state, in
// chunks of positions on the tensor cores: TF32 operands, fp32 sums. false,
// launching nothing, when the operands are wider than it takes (64 columns).
bool causal_product_chunked(Operand a, Operand b, Operand c, float* out, int64_t out_width, int64_t N, int64_t L,
                            int64_t H, bool reverse, const int32_t* lengths);

}  // namespace lt::kernels
