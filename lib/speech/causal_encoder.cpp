// CausalEncoder (speech/causal_encoder.h). A pause found inside a chunk
// discards the state after it: the positions that follow are encoded again
// from the fresh state, so where chunks end never changes the cuts. Chunks
// start at the pause's length after a restart and double up to kChunk, so
// what is encoded twice stays a small share.
#include "speech/causal_encoder.h"

#include <algorithm>

namespace lt::speech {

namespace {
// Positions per encoder call: a long input is cut so the buffers stay small.
constexpr int64_t kChunk = 64;
}  // namespace

CausalEncoder::CausalEncoder(SequenceModel& model, const Precision& precision, int64_t pause)
    : model_(model), state_(model.new_state(1, precision.state)), pauses_(pause) {
  chunk_ = kChunk;
  inputs_ = Tensor::empty({kChunk, model.config().input_features}, model.device());
  heads_ = Tensor::empty({kChunk, model.config().head.width()}, model.device());
}

void CausalEncoder::encode(const float* inputs, int64_t n, float* logits) {
  const int64_t F = model_.config().input_features, C = model_.config().head.width();
  for (int64_t done = 0; done < n;) {
    const int64_t T = std::min(chunk_, n - done);
    Tensor in = inputs_.rows(0, T).reshape({1, T, F}), heads = heads_.rows(0, T).reshape({1, T, C});
    in.copy_from(Tensor::wrap(const_cast<float*>(inputs + done * F), {1, T, F}, Device::cpu));
    model_.continue_chunk(state_, in, heads);
    float* out = logits + done * C;
    Tensor::wrap(out, {1, T, C}, Device::cpu).copy_from(heads);
    int64_t kept = T;
    bool restart = false;
    for (int64_t i = 0; i < T && !restart; ++i)
      if (pauses_.ends_pause(out + i * C, C)) kept = i + 1, restart = true;
    if (restart) {
      state_.reset();
      // A silence then restarts exactly where a chunk ends: nothing is encoded twice.
      chunk_ = std::min(pauses_.pause(), kChunk);
    } else {
      chunk_ = std::min(2 * chunk_, kChunk);
    }
    done += kept;
  }
}

}  // namespace lt::speech
