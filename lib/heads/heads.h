// Output heads of the autoregressive models: what turns the last layer's
// outputs into a distribution over the next byte, its negative log-likelihood
// and gradient for training, and draws from it for generation.
//
//   Tensor nll = Tensor::empty({R});
//   double loss = mol_loss_forward(params, bytes, nll);      // mean nats per position
//   mol_loss_backward(params, bytes, 1.f / R, dparams);      // d loss / d params
//   mol_sample(params_last_step, seed, t, next_bytes);       // one decoding step
//
// Conventions: params [..., C] are rows x C (every leading axis flattened);
// targets and sampled bytes are int32 with one entry per row; nll is float
// with one entry per row; dparams has the shape of params and is overwritten
// (it is an input gradient, as in ops.h). All tensors share one device.
#pragma once
#include <cstdint>
#include <vector>

#include "common/logistic_bins.h"  // kMolNumClasses, kMolLogScaleMin
#include "common/random.h"
#include "core/tensor.h"
#include "heads/ctc.h"

namespace lt {

// ---- Discretized mixture of logistics (PixelCNN++), as the reference ---------
// Each row holds K components laid out [logits (K) | means (K) | log-scales (K)].
// A byte b is the value y = b / 255 * 2 - 1 in [-1, 1]; component k gives it
// the mass of a logistic(mean, exp(log_scale)) over the bin [y - 1/255, y + 1/255],
// the open-ended bin for bytes 0 and 255.

// nll[r] = -log p(targets[r] | params[r]) in nats; returns the mean over rows
// (accumulated in double). Throws on a target outside [0, 255].
double mol_loss_forward(const Tensor& params, const Tensor& targets, Tensor& nll);
// dparams = scale * d(sum_r nll[r]) / d params (scale = 1/R for the mean).
void mol_loss_backward(const Tensor& params, const Tensor& targets, float scale,
                       Tensor& dparams);
// out[b] = a byte drawn from row b: a component from softmax(logits), then a
// logistic value with the clamped scale, rounded to its bin. Its randomness is
// sample_uniform(seed, step, b, 0|1), so CPU and CUDA draw the same bytes.
void mol_sample(const Tensor& params, uint64_t seed, int64_t step, Tensor& out);
// out[b] = mol_sample's byte for params[b] alone (row 0 of a batch of one)
// with seed seeds[b] at step steps[b]: the next bytes of independent images
// in one pass, not a parallel region each (CPU).
void mol_sample_rows(const Tensor& params, const uint64_t* seeds, const int64_t* steps, Tensor& out);

// ---- Categorical over V classes (256 for bytes): logits [..., V] -------------
// Cross entropy in nats, same conventions as the mixture above.
double categorical_loss_forward(const Tensor& logits, const Tensor& targets, Tensor& nll);
void categorical_loss_backward(const Tensor& logits, const Tensor& targets, float scale,
                               Tensor& dlogits);
// out[b] = inverse CDF of softmax(logits[b]) at sample_uniform(seed, step, b, 0).
void categorical_sample(const Tensor& logits, uint64_t seed, int64_t step, Tensor& out);
// As mol_sample_rows: row b as row 0 with its own seed and step (CPU).
void categorical_sample_rows(const Tensor& logits, const uint64_t* seeds, const int64_t* steps, Tensor& out);

// ---- A model's output head: one of the distributions above, as a value ----
// What head outputs [rows, length, width] are scored against: a target per
// position (mixture, categorical) or a label sequence per row (CTC, heads/ctc.h),
// over each row's scored positions.
struct HeadTargets {
  Tensor positions;  // per-position heads: int32 [rows * length] (any device), row-major
  CtcTargets labels;  // CTC: each row's labels
  // Per row, the scored positions first[r]..last[r]-1 (CTC: from 0, last[r]
  // the row's real frames); empty: all of them.
  std::vector<int64_t> first, last;
};

// Device storage a loss reuses from batch to batch (grown, never shrunk),
// and the views of its last forward that backward reads.
struct LossBuffers {
  Tensor targets, picked, dpicked, nll;  // storage: a per-position head's scored positions, compacted
  Tensor scored_targets, scored;         // the last forward's targets and head rows [n], [n, width]
};

enum class HeadKind { mixture_of_logistics, categorical, ctc };
struct OutputHead {
  HeadKind kind = HeadKind::mixture_of_logistics;
  int64_t mixtures = 10;  // mixture of logistics: K components over 256 byte values
  int64_t classes = 256;  // categorical: V classes; ctc: the blank (0) and the labels
  int64_t width() const { return kind == HeadKind::mixture_of_logistics ? 3 * mixtures : classes; }
  const char* name() const {
    return kind == HeadKind::categorical ? "categorical" : kind == HeadKind::ctc ? "ctc" : "mol";
  }
  // Whether it draws one position at a time (sample); CTC scores whole rows.
  bool per_position() const { return kind != HeadKind::ctc; }
  // What its loss is the mean over: the scored positions, or the labels (CTC).
  // Throws lt::Error when the targets do not fit rows x length or this head.
  int64_t counted(const HeadTargets& targets, int64_t rows, int64_t length) const;
  // The mean nats over counted() of head [rows, length, width]. nll, if given,
  // receives one value per scored position (row-major), or per row (CTC: its
  // summed nats); accuracy, if given, the fraction of scored positions whose
  // most likely class is the target (CTC: -1).
  double loss_forward(const Tensor& head, const HeadTargets& targets, LossBuffers& buffers, Tensor* nll = nullptr,
                      double* accuracy = nullptr) const;
  // dhead = scale * d(summed nats) / d head, zero at positions not scored;
  // after loss_forward with the same head, targets and buffers.
  void loss_backward(const Tensor& head, const HeadTargets& targets, float scale, LossBuffers& buffers,
                     Tensor& dhead) const;
  // The sample functions above (per-position heads only).
  void sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& out) const;
  void sample_rows(const Tensor& head, const uint64_t* seeds, const int64_t* steps, Tensor& out) const;
};

}  // namespace lt
