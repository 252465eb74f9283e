// Buffers of TransformerStack and of its passes, planned once per shape so
// that neither a training step nor a generation step allocates.
#pragma once
#include <map>

#include "backend/cuda_graph.h"
#include "model/step_linear.h"
#include "model/transformer.h"
#include "ops/ops.h"

namespace lt {

struct TransformerStack::LayerActs {
  Tensor q, k, v;       // projections [R, d]
  Tensor fq, fk;        // phi(q), phi(k) (linear attention)
  Tensor probs;         // [B, H, L, L] (softmax attention)
  Tensor lsh_order;     // int32 [B, H, rounds, L] (LSH attention: each round's sorted positions)
  Tensor lsh_lse;       // [B, H, L] (LSH attention: each query's log-normaliser)
  Tensor att;           // attention output [R, d]
  Tensor res1, x1;      // x + attention, norm1 of it
  Tensor mean1, rstd1;  // norm1 statistics [R]
  Tensor h, ad;         // linear1 output, dropout(relu(h)) [R, ff]
  Tensor hc;            // the convolution of h, ReLU's input with ff_conv [R, ff]
  Tensor res2;          // x1 + feed-forward
  Tensor mean2, rstd2;  // norm2 statistics [R]
};

// Everything a training forward leaves for its backward, in one arena that
// only grows: planned for the largest (B, L) it has held, a smaller batch or
// a shorter sequence reuses it, and a loop that keeps its pass allocates
// nothing after its largest shape. Views start on 64-byte boundaries for the
// vector units and cuBLASLt.
struct TransformerStack::Pass final : EncoderPass {
  explicit Pass(const TransformerStack& s) : stack(&s) {}
  const TransformerStack* stack;  // that made it: another stack refuses it
  int64_t B = 0, L = 0;           // of its forward
  Tensor arena;
  std::vector<LayerActs> acts;
  std::vector<Tensor> layer_out;       // output of layer l (input of l+1), pre final norm [R, d]
  Tensor input;                        // [R, d]: the forward's x, copied
  Tensor final_mean, final_rstd;       // the final norm's statistics [R]
  Tensor lengths;                      // on the parameters' device, or undefined for all L
  std::vector<int32_t> lengths_host;   // the same on the host
  ForwardOptions options;              // the forward's (train only with dropout on), which backward repeats
  float dropout = 0.f;                 // the rate its masks were drawn at
  // Padded positions' rows of rows [B*L, ...] become zeros: their outputs
  // are defined, and their gradients reach nothing.
  void zero_padded_rows(Tensor& rows) const {
    for (int64_t b = 0; b < int64_t(lengths_host.size()); ++b)
      if (lengths_host[b] < L) rows.rows(b * L + lengths_host[b], (b + 1) * L).zero();
  }
};

struct TransformerStack::GradBuffers {
  Tensor dres, dtmp, dx1, datt, dq, dk, dv, dfq, dfk;  // [R, d]
  Tensor dcur, dnext;                                  // gradient entering / leaving a layer
  Tensor o;                                            // the forward's scratch [R, d]
  Tensor dff, dffc;                                    // [R, ff]: of h, and of hc with ff_conv
};

struct TransformerStack::StepBuffers {
  int64_t B = 0;
  Tensor qkv;                             // [B, 3d]: one product's q | k | v
  Tensor q, k, v;                         // [B, d]: split out of qkv for softmax attention
  Tensor att, o, x1, cur, next;           // [B, d]
  Tensor h, hc;                           // [B, ff]: linear1's output, the convolution's (with ff_conv)
  Tensor mean, rstd;                      // [B]: the final norm's
  Tensor row_map;                         // int32 [2B]: a pool's B int64 rows, on the GPU
  Tensor rounded;                         // int32: the bf16 products' inputs rounded (PackedLinear's scratch)
  std::map<int64_t, CudaGraph> graphs;    // a linear stack's step on the GPU, replayed: one per batch size
};

// Per layer: query, key and value projections as one product of 3d outputs.
struct TransformerStack::StepWeights {
  struct Layer {
    StepLinear qkv, o, ff1, ff2;
    Tensor bqkv;  // [3d]
  };
  std::vector<Layer> layers;
};

}  // namespace lt
