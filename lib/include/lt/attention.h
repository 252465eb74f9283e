// Attention in the paper's forms (Katharopoulos et al. 2020, "Transformers are
// RNNs"). Layout, as the reference implementation: queries [N, L, H, E],
// keys [N, S, H, E], values [N, S, H, M], output [N, L, H, M].
// Linear attentions take feature-mapped queries and keys (phi applied by a
// FeatureMap, see feature_map.h), so a new feature map needs no change here.
// Gradient conventions as ops.h: input gradients are overwritten.
#pragma once
#include <cstdint>

#include "lt/feature_map.h"
#include "lt/tensor.h"

namespace lt {

// eps of the normaliser, as the reference implementation.
constexpr float kLinearAttentionEps = 1e-6f;

// ---- Lengths: padded batches --------------------------------------------------
// The lengths arguments (key_lengths, lengths) are int32 [N] on the tensors'
// device, or an undefined Tensor for "every position is real". Positions t >=
// lengths[n] are padding: they change no sum or state, their outputs are
// exactly zero and their inputs get zero gradients; what real positions
// compute equals the same call on the unpadded sequence. On the CPU a length
// outside [0, L] throws; on the GPU the softmax and causal kernels read the
// lengths on the device (no copy to the host per call) and clamp them to [0, L].

// ---- Softmax attention (eq. 2), temperature 1/sqrt(E) -------------------------
// probs [N, H, L, S] is written by forward and read by backward (the quadratic
// memory the paper compares against). causal masks keys s > l (needs L == S);
// backward needs no flag, the mask is in probs as exact zeros.
// key_lengths as above. Keys s >= key_lengths[n] get probability 0; in
// self-attention (L == S) the query rows l >= key_lengths[n] are padding too:
// their probs rows and outputs are zero, and backward gives them (and every
// padded key and value) zero gradients. Cross-attention (L != S) masks keys
// only, and a row with no key at all outputs zeros.
void softmax_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                               bool causal, Tensor& probs, Tensor& out);
void softmax_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                                const Tensor& probs, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv);
// One decoding step with a KV cache: writes k, v [N, H, E|M] into row t of
// k_cache [N, T, H, E] and v_cache [N, T, H, M], then attends q [N, H, E] to
// rows 0..t (0 <= t < T; rows after t are neither read nor written). out [N, H, M].
void softmax_attention_step(const Tensor& q, const Tensor& k, const Tensor& v, int64_t t,
                            Tensor& k_cache, Tensor& v_cache, Tensor& out);

// ---- Linear attention, non-causal (eq. 4-6) -------------------------------------
// out_l = phi(q_l)^T sum_s phi(k_s) v_s^T / (phi(q_l)^T sum_s phi(k_s) + eps).
// key_lengths as above: keys s >= key_lengths[n] contribute nothing and get
// zero gradients; as for softmax attention, in self-attention (L == S) the
// queries l >= key_lengths[n] are padding too (zero outputs, zero gradients),
// and cross-attention masks keys only. These lengths are read on the host on
// both devices (they size the products; a length outside [0, S] throws). The
// feature width F = fq.dim(3) may differ from the values' M. Backward
// recomputes the key sums instead of saving them (memory O(L + S)).
void linear_attention_forward(const Tensor& fq, const Tensor& fk, const Tensor& v,
                              const Tensor& key_lengths, Tensor& out);
void linear_attention_backward(const Tensor& fq, const Tensor& fk, const Tensor& v,
                               const Tensor& key_lengths, const Tensor& dout, Tensor& dfq,
                               Tensor& dfk, Tensor& dv);

// ---- Causal linear attention (eq. 9-12), parallel over the sequence -------------
// out_l = phi(q_l)^T S_l / (phi(q_l)^T Z_l + eps), S_l = sum_{j<=l} phi(k_j) v_j^T,
// Z_l = sum_{j<=l} phi(k_j). Memory O(L): never an L x F x M intermediate; the
// backward recomputes states chunk by chunk (eq. 13-15, Algorithm 1). Padding
// at the end cannot reach a real position (causality); lengths only make the
// padded outputs and gradients zero.
void causal_linear_attention_forward(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                     const Tensor& lengths, Tensor& out);
void causal_linear_attention_backward(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                      const Tensor& lengths, const Tensor& dout, Tensor& dfq,
                                      Tensor& dfk, Tensor& dv);
// The same over a chunk of T positions that continues a state, in one parallel
// pass (as rwkv.cpp's eval_sequence): fq, fk [N, T, H, F], v [N, T, H, M],
// S [N, H, F, M] (float32 or bfloat16), Z [N, H, F], out [N, T, H, M]:
//   out_t = phi(q_t)^T (S + sum_{j<=t} phi(k_j) v_j^T)
//           / (phi(q_t)^T (Z + sum_{j<=t} phi(k_j)) + eps),
// then S, Z are overwritten with the state after the chunk's real positions.
// Prefill of a prompt is this call from a zero state; steps, chunks and
// prefill are interchangeable. A bfloat16 S is read once, summed in float32
// and rounded once when stored.
void causal_linear_attention_continue(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                      const Tensor& lengths, Tensor& S, Tensor& Z, Tensor& out);

// ---- Recurrent form (eq. 16-20) --------------------------------------------------
// One step for every batch element from fq, fk [N, H, F] and v [N, H, M]:
// S [N, H, F, M] += phi(k) v^T, Z [N, H, F] += phi(k), then out [N, H, M] =
// phi(q)^T S / (phi(q)^T Z + eps). F (the feature map's width) may differ from
// M. S and Z are caller-owned (views into a model's flat state buffer) and
// updated in place. S may be bfloat16: the sums stay float32, S is rounded
// when stored.
void linear_attention_step(const Tensor& fq, const Tensor& fk, const Tensor& v, Tensor& S,
                           Tensor& Z, Tensor& out);
// The same step from one product's rows qkv [N, 3, H, E] (queries | keys |
// values, M = E). An elementwise phi (phi.elementwise() != none) is applied to
// q and k as they are read: generation's hot loop makes no copies and no phi
// pass. Any other map (favor) runs its forward into buffers that only grow,
// then the step above. S [N, H, F, E] float32 or bfloat16 and Z [N, H, F] with
// F = phi.feature_dim(E); out [N, H, E].
void linear_attention_step_packed(const Tensor& qkv, const FeatureMap& phi, Tensor& S, Tensor& Z, Tensor& out);

}  // namespace lt
