// A causal linear model's encoder over positions that arrive in order: the
// state continues from call to call and starts afresh in every pause, a run
// of positions whose likeliest class is the blank. The models learn from
// utterances of a few seconds; over a longer stream the state sums ever more
// history, the position code passes any it was trained on, and recognition
// decays (docs/speech.md, "Long recordings"). Starting again in the pauses
// keeps each segment as long as the speech between them. Offline recognition
// encodes through this; a stream steps a pool row position by position and
// restarts it by the same PauseFinder rule, so both cut at the same positions.
#pragma once
#include <cstdint>
#include <vector>

#include "core/precision.h"
#include "core/tensor.h"
#include "model/sequence_model.h"
#include "speech/pause_finder.h"

namespace lt::speech {

class CausalEncoder {
 public:
  // pause: blank positions after which the state starts afresh; 0: never.
  CausalEncoder(SequenceModel& model, const Precision& precision, int64_t pause);
  // The logits [n, classes] of the next n positions' inputs [n, features].
  void encode(const float* inputs, int64_t n, float* logits);

 private:
  SequenceModel& model_;
  RecurrentState state_;  // its position is the current segment's: the position code restarts with it
  PauseFinder pauses_;
  int64_t chunk_;  // positions of the next continue_chunk call
  Tensor inputs_, heads_;  // one call's [chunk, features], [chunk, classes]
};

}  // namespace lt::speech
