// Connectionist temporal classification (Graves et al. 2006): the loss of a
// frame-wise classifier against a label sequence of another, shorter length,
// summed over every alignment, and decoding its outputs back into labels.
//
//   double nats = ctc_loss_forward(logits, frames, targets, nll);   // logits [B, T, C]
//   ctc_loss_backward(logits, frames, targets, scale, dlogits);
//   std::vector<int32_t> phones = ctc_greedy_decode(row, frames, C);
//
// Class 0 is the blank. An alignment is one class per frame; it emits the
// labels left after merging repeated classes and dropping blanks, so two equal
// labels in a row need a blank between them.
#pragma once
#include <cstdint>
#include <vector>

#include "lt/tensor.h"

namespace lt {

// Labels of a batch: row b's labels are labels[offsets[b] .. offsets[b+1]),
// each in 1..C-1 (0 is the blank).
struct CtcTargets {
  std::vector<int32_t> labels;
  std::vector<int64_t> offsets;  // rows + 1 entries, offsets[0] = 0
  int64_t rows() const { return int64_t(offsets.size()) - 1; }
  int64_t length(int64_t b) const { return offsets[b + 1] - offsets[b]; }
};

// The fewest frames that can emit these labels: one each, plus one blank
// between each pair of equal neighbours.
int64_t ctc_min_frames(const int32_t* labels, int64_t n);

// logits [B, T, C] (before the softmax; CPU or CUDA), frames[b] the real
// frames of row b (<= T: later frames are padding and ignored).
// nll[b] = -log p(labels_b | logits_b) in nats, computed in log space (the
// alpha recursion); returns the sum over rows. A row with fewer frames than
// ctc_min_frames has no alignment: its nll is +inf and its gradient zero (the
// documented choice; training data leaves such utterances out beforehand).
// Labels outside 1..C-1 or frames outside 0..T throw lt::Error naming the row.
double ctc_loss_forward(const Tensor& logits, const std::vector<int32_t>& frames, const CtcTargets& targets,
                        Tensor& nll);
// dlogits = d(sum_b scale[b] nll[b]) / d logits: per frame, the softmax minus
// the posterior occupancy of each class (alpha-beta), times scale[b]; zero on
// padded frames. Overwrites dlogits.
void ctc_loss_backward(const Tensor& logits, const std::vector<int32_t>& frames, const CtcTargets& targets,
                       const std::vector<float>& scale, Tensor& dlogits);

// ---- Decoding one utterance: rows [frames, classes] of logits on the host ----
// The most likely class per frame, repeats merged, blanks dropped.
std::vector<int32_t> ctc_greedy_decode(const float* logits, int64_t frames, int64_t classes);

struct CtcBeamOptions {
  int beam = 16;          // prefixes kept after each frame
  float prune = -1e30f;   // classes whose log-probability at a frame is below this are not extended (e.g. -10)
};
// CTC prefix beam search (Hannun et al. 2014, without a language model): the
// label sequence with the largest summed probability over its alignments
// among the prefixes kept. Takes logits and applies the log-softmax itself.
std::vector<int32_t> ctc_prefix_beam_search(const float* logits, int64_t frames, int64_t classes,
                                            const CtcBeamOptions& options = {});

// The same search over frames that arrive one at a time (streaming
// recognition): after the last push, best() equals ctc_prefix_beam_search
// over all of them.
class CtcPrefixBeam {
 public:
  explicit CtcPrefixBeam(int64_t classes, const CtcBeamOptions& options = {});
  void push(const float* logits_row);  // one frame's logits [classes]
  std::vector<int32_t> best() const;   // the most probable prefix so far
  void reset();

 private:
  struct Prefix {
    std::vector<int32_t> labels;
    double blank, label;  // log p of the frames so far emitting labels, ending in a blank / in its last label
  };
  int64_t classes_;
  CtcBeamOptions options_;
  std::vector<Prefix> beams_;
  std::vector<double> logp_;
};

}  // namespace lt
