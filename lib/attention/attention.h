// Attention in the paper's forms (Katharopoulos et al. 2020, "Transformers are
// RNNs"). Layout, as the reference implementation: queries [N, L, H, E],
// keys [N, S, H, E], values [N, S, H, M], output [N, L, H, M].
// Linear attentions take feature-mapped queries and keys (phi applied by a
// FeatureMap, see feature_map.h), so a new feature map needs no change here.
// Gradient conventions as ops.h: input gradients are overwritten.
#pragma once
#include <cstdint>

#include "attention/feature_map.h"
#include "common/constants.h"  // kLinearAttentionEps
#include "core/tensor.h"

namespace lt {

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
// padded outputs and gradients zero. tf32 (CUDA only, as the products' tf32):
// the chunks' products on the tensor cores, TF32 operands with fp32 sums,
// where F <= 64 and M <= 63; fp32 otherwise.
void causal_linear_attention_forward(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                     const Tensor& lengths, Tensor& out, bool tf32 = false);
void causal_linear_attention_backward(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                      const Tensor& lengths, const Tensor& dout, Tensor& dfq,
                                      Tensor& dfk, Tensor& dv, bool tf32 = false);
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
// when stored. With rows (a state pool's, in the state's device's memory; a
// GPU's are not checked here), batch element n steps row rows[n] of S [R, H,
// F, M] and Z [R, H, F] in place, R >= N, and every other row is left alone.
// On the CPU the elements then step in order on the calling thread, so a
// row may come again (its next positions: a pool's thread slices give the
// parallelism); on a GPU the rows must be distinct.
void linear_attention_step(const Tensor& fq, const Tensor& fk, const Tensor& v, Tensor& S,
                           Tensor& Z, Tensor& out, const int64_t* rows = nullptr);
// The same step from one product's rows qkv [N, 3, H, E] (queries | keys |
// values, M = E). An elementwise phi (phi.elementwise() != none) is applied to
// q and k as they are read: generation's hot loop makes no copies and no phi
// pass. Any other map (favor) runs its forward into buffers that only grow,
// then the step above. S [N, H, F, E] float32 or bfloat16 and Z [N, H, F] with
// F = phi.feature_dim(E); out [N, H, E]; rows as above.
void linear_attention_step_packed(const Tensor& qkv, const FeatureMap& phi, Tensor& S, Tensor& Z, Tensor& out,
                                  const int64_t* rows = nullptr);

// ---- Reformer LSH attention (Kitaev et al. 2020), the paper's baseline ----------
// Shared-QK attention (Reformer section 2): keys are the queries normalised,
// k_j = q_j / |q_j|, scores q_i . k_j / sqrt(E). Each of `rounds` hashing rounds
// puts position i in bucket argmax([q_i R; -q_i R]) (angular LSH, R [E, b/2]
// random), sorts the real positions by (bucket, position), cuts the order into
// chunks of `chunk`, and lets each query attend to the keys of its chunk and of
// the previous one (no wrap-around), only keys j <= i when causal. A position
// does not attend to itself unless nothing else is available (section 2,
// "causal masking for shared-QK attention"); then its output is its value.
// Rounds combine as one softmax over the union of their key sets, each key
// counted once (appendix A: each round's scores less ln N_ij, N_ij the rounds
// in which i sees j, merged by their log-normalisers).
struct LshOptions {
  int64_t rounds = 1;    // hashing rounds (the paper: lsh-1, lsh-4)
  int64_t buckets = 64;  // 1 (no hashing) or even; see lsh_bucket_count for short sequences
  int64_t chunk = 32;    // positions per chunk of the sorted order
  bool causal = false;   // keys at positions <= the query's only
  void validate() const;  // throws lt::Error naming the bad value
};
// The buckets a sequence of `length` real positions is hashed into:
// min(buckets, 2 ceil(length / chunk)) (1 stays 1), so that a bucket holds
// about half a chunk and a query's window (two chunks) spans its bucket and
// its neighbours even on short sequences. The rotations' first b/2 columns are used.
int64_t lsh_bucket_count(const LshOptions& o, int64_t length);
// Fills rotations [rounds, E, buckets / 2] with standard normals from seed
// (counter-based: the same seed draws the same rotations on any machine).
void draw_lsh_rotations(uint64_t seed, Tensor& rotations);
// qk [N, L, H, E] (queries = keys), v [N, L, H, M], rotations as above
// (undefined when buckets == 1), lengths as for the other forms (padded keys
// are never attended, padded queries output zeros). Forward writes out
// [N, L, H, M] and what backward needs: order int32 [N, H, rounds, L], per
// round the real positions in sorted order (-1 past the length), and lse
// [N, H, L], each query's log-normaliser (-inf: it attends to itself only; 0
// for padding). Backward is exact for that bucketing (the hashing itself is
// not differentiated, as in Reformer) and needs the forward's out. CPU only.
void lsh_attention_forward(const Tensor& qk, const Tensor& v, const Tensor& rotations, const Tensor& lengths,
                           const LshOptions& o, Tensor& order, Tensor& lse, Tensor& out);
void lsh_attention_backward(const Tensor& qk, const Tensor& v, const Tensor& lengths, const LshOptions& o,
                            const Tensor& order, const Tensor& lse, const Tensor& out, const Tensor& dout,
                            Tensor& dqk, Tensor& dv);

}  // namespace lt
