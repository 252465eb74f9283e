// Continuous batching of image generation: a request (a sample from a seed,
// or a completion) joins the running batch at its next step and leaves when
// its last subpixel is drawn, as llama.cpp's server slots do, so nobody waits
// for a batch to drain. Every unfinished image advances one subpixel per
// step, all of them in one batched step over a StatePool, each at its own
// position. An image is the one ImageGenerator gives for its seed alone
// (batch 1), byte for byte: its products and draws depend on its own row only.
//
//   lt::ImageBatch batch(model, precision);
//   lt::ImageJob* a = batch.add(seed, nullptr);
//   while (!a->done()) batch.step();   // others may join between steps
//   use(a->pixels); batch.remove(a);
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <vector>

#include "model/image_generation.h"
#include "model/state_pool.h"

namespace lt {

struct ImageJob {
  uint64_t seed = 0;                      // the draws' (lt_image_sample's splitmix64 of the user's)
  std::optional<ImageConstraint> known;   // a completion's
  std::vector<uint8_t> pixels;            // [subpixels], later ones 0
  int64_t decided = 0;                    // subpixels 0..decided-1 are final
  bool done() const { return decided == int64_t(pixels.size()); }

 private:
  friend class ImageBatch;
  int64_t row = -1;       // in the pool, from its first step
  bool have_head = false; // head holds the distribution of subpixel `decided` (after a prefill)
  Tensor head;            // [1, head width]
};

class ImageBatch {
 public:
  // An image model with a recurrent form of fixed size (causal linear), on
  // the CPU; it must outlive the batch.
  ImageBatch(ImageModel& model, const Precision& precision);
  // A job that joins at the next step. What needs no model is decided now:
  // the first subpixel from the model's histogram, or a completion's known
  // prefix. The job lives until remove().
  ImageJob* add(uint64_t seed, const ImageConstraint* constraint = nullptr);
  // Decides the next subpixel of every unfinished job; returns how many are
  // still unfinished. A completion's prefix is read in one parallel pass at
  // its first step.
  int64_t step();
  void remove(ImageJob* job);
  int64_t jobs() const { return int64_t(jobs_.size()); }

 private:
  ImageModel& model_;
  StatePool pool_;
  std::list<ImageJob> jobs_;
  // One step's, grown and reused.
  std::vector<int64_t> rows_;
  std::vector<ImageJob*> stepping_;
  std::vector<uint64_t> seeds_;  // the stepped rows' draws
  std::vector<int64_t> steps_;
  Tensor tokens_, heads_, drawn_, one_;
};

}  // namespace lt
