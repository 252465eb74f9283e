// A random batch for a CTC speech model: frames, and label sequences that
// fit them (CTC needs a frame per label plus one per repeat).
#pragma once
#include <cstdint>

#include "model/sequence_model.h"
#include "test_util.h"

namespace lt::test {

// Row 0 is the whole length, the others padded (at least 3 frames).
inline SequenceBatch random_speech_batch(Rng& rng, int64_t rows, int64_t length, int64_t features, int64_t classes) {
  SequenceBatch b;
  b.rows = rows;
  b.length = length;
  b.features = rng.normals(rows * length * features);
  b.labels.offsets = {0};
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t frames = r == 0 ? int32_t(length) : int32_t(rng.integer(3, length));
    b.lengths.push_back(frames);
    const int64_t n = rng.integer(1, frames / 2);
    for (int64_t i = 0; i < n; ++i) b.labels.labels.push_back(int32_t(rng.integer(1, classes - 1)));
    b.labels.offsets.push_back(int64_t(b.labels.labels.size()));
  }
  return b;
}

}  // namespace lt::test
