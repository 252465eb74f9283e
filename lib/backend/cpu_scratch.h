// Scratch memory of the CPU ops that only grows, one set per calling thread
// (training replicas run ops side by side): after the largest call an op
// allocates nothing, in training steps and in generation's step loop alike.
// A slot is valid until the same thread asks for that slot again, so an op
// that calls another scratch user takes a different slot from it.
#pragma once
#include <cstddef>
#include <vector>

namespace lt::cpu {

enum ScratchSlot { kScratchHeads = 0, kScratchSaved = 1, kScratchSlots = 2 };

inline float* scratch(size_t floats, ScratchSlot slot = kScratchHeads) {
  thread_local std::vector<float> buffers[kScratchSlots];
  std::vector<float>& b = buffers[slot];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

}  // namespace lt::cpu
