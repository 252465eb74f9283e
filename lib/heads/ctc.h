// Connectionist temporal classification (Graves et al. 2006): the loss of a
// frame-wise classifier against a label sequence of another, shorter length,
// summed over every alignment, and decoding its outputs back into labels.
//
//   double nats = ctc_loss_forward(logits, frames, targets, nll);   // logits [B, T, C]
//   ctc_loss_backward(logits, frames, targets, scale, dlogits);
//   std::vector<lt::CtcToken> phones = ctc_decode(row, frames, C, {.beam = 16});
//
// Class 0 is the blank. An alignment is one class per frame; it emits the
// labels left after merging repeated classes and dropping blanks, so two equal
// labels in a row need a blank between them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"

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

// ---- Decoding: labels with the frames they were spoken at ----
// A decoded label and the frames of its alignment in the decoded hypothesis:
// the frame that first emitted it and the last frame it still held (greedy:
// its run of best classes; beam: the last frame its prefix was kept with the
// label more likely than a blank after it).
struct CtcToken {
  int32_t label = 0;
  int64_t start = 0, end = 0;  // frames, inclusive
  bool operator==(const CtcToken& o) const { return label == o.label && start == o.start && end == o.end; }
};
std::vector<int32_t> labels_of(const std::vector<CtcToken>& tokens);

struct CtcBeamOptions {
  int beam = 1;           // prefixes kept after each frame; 1: greedy (the best class per frame)
  float prune = -1e30f;   // beam: classes whose log-probability at a frame is below this are not extended (e.g. -10)
  // beam: hypotheses that still disagree about a token older than this many
  // frames give way to the best one, so tokens settle within a bounded delay
  // (prefix beam search alone can keep two rivals for ever).
  int max_delay = 100;
};

// Frames arrive one at a time (streaming recognition); tokens come out in
// order, each once, as soon as no later frame can change them, so memory
// stays bounded however long the stream. Greedy: the best class per frame,
// repeats merged, blanks dropped. Beam: CTC prefix beam search (Hannun et
// al. 2014, without a language model), each prefix summing every alignment
// that emits it; the result is the most probable prefix after the last frame.
class CtcDecoder {
 public:
  virtual ~CtcDecoder() = default;
  virtual void push(const float* logits_row) = 0;  // one frame's logits [classes] (the log-softmax is applied here)
  // Appends the tokens settled since the last call; after finish(), all of them.
  virtual void take_settled(std::vector<CtcToken>& out) = 0;
  virtual void finish() = 0;
  // The best hypothesis's tokens after those settled: what may still change.
  virtual std::vector<CtcToken> tentative() const = 0;
  // Asks for the memory the next push() reads first, ahead of it (a group
  // decodes its streams one after another, each finding its own evicted).
  virtual void prefetch() const {}
};
std::unique_ptr<CtcDecoder> make_ctc_decoder(int64_t classes, const CtcBeamOptions& options = {});

// A whole utterance: rows [frames, classes] of logits on the host.
std::vector<CtcToken> ctc_decode(const float* logits, int64_t frames, int64_t classes,
                                 const CtcBeamOptions& options = {});

}  // namespace lt
