// Basic ops, each a forward/backward pair of free functions that dispatch on
// the device of their tensors (all arguments must share it). Outputs are
// written, never allocated; parameter gradients (dW, db, dgamma, ...) are
// accumulated with += so that several uses of a weight add up (as llm.c).
// Input gradients (dx) are overwritten. "rows" means every leading axis
// flattened: x of shape [..., C] is rows x C.
#pragma once
#include <cstdint>

#include "common/constants.h"  // kLayerNormEps
#include "core/precision.h"
#include "core/tensor.h"

namespace lt {

// y = x W^T + b.  x [..., in], W [out, in] (PyTorch layout), b [out] or undefined.
// products: fp32; bf16 on a CPU with AVX512_BF16 (lt's bf16 GEMM, fp32
// sums); tf32 on CUDA (cuBLAS on the tensor cores). A precision the
// tensors' device cannot run throws lt::Error.
void linear_forward(const Tensor& x, const Tensor& W, const Tensor& b, Tensor& y,
                    Products products = Products::fp32);
// y = max(0, x W^T + b): a feed-forward's first product and its ReLU, in
// one pass on the GPU (cuBLASLt's epilogue).
void linear_relu_forward(const Tensor& x, const Tensor& W, const Tensor& b, Tensor& y,
                         Products products = Products::fp32);
// dx = dy W (skipped if dx undefined); dW += dy^T x; db += sum of dy rows (if defined).
void linear_backward(const Tensor& x, const Tensor& W, const Tensor& dy, Tensor& dx, Tensor& dW,
                     Tensor& db, Products products = Products::fp32);

// LayerNorm over the last axis, eps 1e-5 as torch.nn.LayerNorm (biased
// variance). mean and rstd hold one value per row (any shape of that size) and
// are saved for the backward pass.
void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                       Tensor& mean, Tensor& rstd);
// y = LayerNorm(x + residual) without statistics: the recurrent step's
// residual add and norm in one pass over the rows.
void residual_layernorm_forward(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                                const Tensor& beta, Tensor& y);
void layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                        const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                        Tensor& dbeta);

// Elementwise activations; backward takes the forward input x.
void relu_forward(const Tensor& x, Tensor& y);
void relu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
void gelu_forward(const Tensor& x, Tensor& y);  // exact: x * Phi(x), as torch's default
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
void elu_plus_one_forward(const Tensor& x, Tensor& y);  // elu(x) + 1, the paper's phi
void elu_plus_one_backward(const Tensor& x, const Tensor& dy, Tensor& dx);

// A depthwise convolution over positions: y[b, t, c] = bias[c] +
// sum_k w[c, k] x[b, t + k - P, c] for x, y [B, L, C], w [C, K], bias [C].
// Centred, P = (K - 1) / 2 with K odd; causal, P = K - 1: no output reads a
// later position. Positions at or past a row's length (lengths int32 [B], or
// undefined: all L) read as zeros and their outputs are zeros, so padding
// changes nothing; so are positions before 0.
void depthwise_conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& lengths, bool causal,
                            Tensor& y);
// dx = the gradient of x (zeros at padded positions); dw, dbias += theirs.
void depthwise_conv_backward(const Tensor& x, const Tensor& w, const Tensor& lengths, bool causal, const Tensor& dy,
                             Tensor& dx, Tensor& dw, Tensor& dbias);
// The causal convolution continued over a chunk x [B, T, C] -> y [B, T, C]:
// window [B, K - 1, C] holds the K - 1 inputs before x (zeros at a
// sequence's start) and becomes the last K - 1 of window and x, so T calls
// of one position give what one call of T gives. With rows (in the window's
// device's memory; a GPU's are not checked here), batch element b continues
// row rows[b] of window [R, K - 1, C]; on the CPU in order on the calling
// thread, so a row may come again (its next positions), on a GPU distinct.
void depthwise_conv_continue(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& window, Tensor& y,
                             const int64_t* rows = nullptr);

// Softmax over the last axis; backward takes the forward output y.
void softmax_forward(const Tensor& x, Tensor& y);
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx);

// y[i] = table[ids[i]].  ids int32 [...], table [V, C], y [..., C].
// An id outside [0, V) throws lt::Error naming it and V, in both passes and on
// both devices (the CUDA path checks on the device and waits for the answer).
void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& y);
void embedding_backward(const Tensor& ids, const Tensor& dy, Tensor& dtable);

// y = a + b (same shapes; y may alias a or b).
void add(const Tensor& a, const Tensor& b, Tensor& y);
// dst += src (same shapes): the backward of a residual add and of a fan-out.
void accumulate(Tensor& dst, const Tensor& src);
// dst [R, c] = columns first .. first + c - 1 of src [R, C] (leading axes
// flattened into R): one strided copy, e.g. q out of packed q | k | v rows.
void copy_columns(const Tensor& src, int64_t first, Tensor& dst);
// dst [n1, n0, C] = src [n0, n1, C] with its two leading axes swapped: a
// batch-major sequence made time-major and back (C = 1 transposes a matrix).
void swap_leading_axes(const Tensor& src, Tensor& dst);

// One LSTM step t over a batch of B rows of H units (torch.nn.LSTM's gates
// i f g o): gates [B, 4H] holds x W_ih^T + b_ih and becomes the activated
// gates; rec [B, 4H] = h_{t-1} W_hh^T + b_hh; c_prev [B, H] gives c and h
// [B, H], h written also into columns first .. first + H - 1 of out [B, W].
// A row with lengths[r] <= t (int32 [B]) is padding: h and c are zero.
void lstm_cell_forward(Tensor& gates, const Tensor& rec, const Tensor& c_prev, const Tensor& lengths, int64_t t,
                       Tensor& c, Tensor& h, Tensor& out, int64_t first);
// Its gradient dgates [B, 4H], from the activated gates, c, c_prev, dh [B, H]
// (from the next step) plus columns first .. of dout [B, W] (from the layer's
// output), and dc [B, H] from the next step, which becomes the previous
// step's. Padding rows get zeros in both.
void lstm_cell_backward(const Tensor& gates, const Tensor& c, const Tensor& c_prev, const Tensor& dh,
                        const Tensor& dout, int64_t first, const Tensor& lengths, int64_t t, Tensor& dc,
                        Tensor& dgates);

// Where a tensor's elements sit in a training batch: viewed as [outer, rows,
// inner], index r of its middle axis is row first + r of the step's whole
// batch. The default is one row, the whole tensor.
struct BatchRows {
  int64_t first = 0;  // the batch row of the tensor's first row
  int64_t rows = 1;   // rows the tensor holds
  int64_t outer = 1;  // 1 when rows lead ([B, ...]); L for a time-major [L, B, ...]
};

// Inverted dropout with probability p in [0, 1) (p = 0 is the identity):
// y = x * mask / (1 - p). The mask of an element is a pure function of (seed,
// its batch row, its index within the row) through a SplitMix64 hash, so a
// batch split over threads or processes draws the masks of the whole batch,
// CPU and CUDA agree bit for bit, and backward recomputes the mask from the
// same arguments rather than storing it.
void dropout_forward(const Tensor& x, float p, uint64_t seed, Tensor& y, const BatchRows& at = {});
void dropout_backward(const Tensor& dy, float p, uint64_t seed, Tensor& dx, const BatchRows& at = {});

// Sinusoidal position code of the reference (Vaswani et al.):
// pe[pos, 2i] = sin(pos / 10000^(2i/D)), pe[pos, 2i+1] = cos(pos / 10000^(2i/D)).
// position_code fills pe [L, D] for positions offset .. offset+L-1; D must be
// even (an odd D throws).
void position_code(int64_t offset, Tensor& pe);
// y [N, L, C + D] = concat(x [N, L, C], pe [L, D]) along the last axis.
void concat_position_forward(const Tensor& x, const Tensor& pe, Tensor& y);
// dx [N, L, C] = the first C channels of dy.
void concat_position_backward(const Tensor& dy, Tensor& dx);

}  // namespace lt
