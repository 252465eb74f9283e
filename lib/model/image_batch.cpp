// ImageBatch (model/image_batch.h): ImageGenerator's loop for one image at a
// time, run for many images at once, each over its own row of a StatePool.
#include "model/image_batch.h"

#include <algorithm>

#include "common/error.h"
#include "common/random.h"

namespace lt {

ImageBatch::ImageBatch(ImageModel& model, const Precision& precision)
    : model_(model), pool_(model.core(), precision) {}

ImageJob* ImageBatch::add(uint64_t seed, const ImageConstraint* constraint) {
  const ImageModelConfig& cfg = model_.config();
  const int64_t S = cfg.subpixels();
  if (constraint && (int64_t(constraint->values.size()) != S || int64_t(constraint->known.size()) != S))
    throw Error("a completion of " + std::to_string(constraint->values.size()) + " subpixels for a model of " +
                std::to_string(S));
  jobs_.emplace_back();
  ImageJob& job = jobs_.back();
  job.seed = seed;
  if (constraint) job.known = *constraint;
  job.pixels.assign(size_t(S), 0);
  const int64_t known = constraint ? std::min(constraint->known_prefix(), S) : 0;
  for (int64_t t = 0; t < known; ++t) job.pixels[size_t(t)] = constraint->values[size_t(t)];
  if (known == 0) job.pixels[0] = uint8_t(first_subpixel(cfg.first_subpixel_histogram, seed, 0));
  job.decided = std::max<int64_t>(known, 1);
  return &job;
}

void ImageBatch::remove(ImageJob* job) {
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
    if (&*it == job) {
      if (it->row >= 0) pool_.release(it->row);
      jobs_.erase(it);
      return;
    }
  throw Error("an image job that is not in this batch");
}

int64_t ImageBatch::step() {
  const int64_t P = model_.config().head_width();
  // Joining jobs take a row; a completion reads its known prefix in one pass.
  stepping_.clear();
  rows_.clear();
  for (ImageJob& job : jobs_) {
    if (job.done()) continue;
    if (job.row < 0) {
      job.row = pool_.acquire();
      if (job.known && job.known->known_prefix() > 0) {
        const int64_t T = job.decided;
        std::vector<int32_t> prefix(job.pixels.begin(), job.pixels.begin() + T);
        Tensor heads = Tensor::empty({1, T, P});
        pool_.continue_chunk(job.row, Tensor::from_vector(prefix, {1, T}), heads);
        job.head = Tensor::empty({1, P});
        job.head.copy_from(heads.reshape({T, P}).rows(T - 1, T));
        job.have_head = true;
      }
    }
    stepping_.push_back(&job);
    if (!job.have_head) rows_.push_back(job.row);
  }
  // One batched step for every job that reads its last subpixel.
  const int64_t n = int64_t(rows_.size());
  if (n > 0) {
    if (!tokens_.defined() || tokens_.dim(0) < n) {
      const int64_t cap = std::max<int64_t>(n, 2 * (tokens_.defined() ? tokens_.dim(0) : 0));
      tokens_ = Tensor::empty({cap}, Device::cpu, DType::i32);
      heads_ = Tensor::empty({cap, P});
      drawn_ = Tensor::empty({cap}, Device::cpu, DType::i32);
    }
    seeds_.clear();
    steps_.clear();
    int64_t i = 0;
    for (ImageJob* job : stepping_)
      if (!job->have_head) {
        tokens_.data_i32()[i++] = job->pixels[size_t(job->decided - 1)];
        seeds_.push_back(job->seed);
        steps_.push_back(job->decided);
      }
    Tensor heads = heads_.rows(0, n);
    pool_.step(rows_, tokens_.rows(0, n), heads);
    // Every row's draw in one pass (a known subpixel's is not used): a
    // parallel region a row cost more than the draws themselves.
    Tensor drawn = drawn_.rows(0, n);
    model_.sample_rows(heads, seeds_.data(), steps_.data(), drawn);
  }
  // Each job's subpixel: known, or drawn from its head with its own seed, as row 0 of a batch of one.
  if (!one_.defined()) one_ = Tensor::empty({1}, Device::cpu, DType::i32);
  int64_t i = 0;
  int64_t running = 0;
  for (ImageJob* job : stepping_) {
    const int64_t t = job->decided;
    const bool stepped = !job->have_head;
    job->have_head = false;
    if (job->known && job->known->known[size_t(t)]) {
      job->pixels[size_t(t)] = job->known->values[size_t(t)];
    } else if (stepped) {
      job->pixels[size_t(t)] = uint8_t(drawn_.data_i32()[i]);
    } else {
      model_.sample(job->head, job->seed, t, one_);
      job->pixels[size_t(t)] = uint8_t(one_.data_i32()[0]);
    }
    if (stepped) ++i;
    job->decided = t + 1;
    if (job->done()) {
      pool_.release(job->row);
      job->row = -1;
    } else {
      ++running;
    }
  }
  return running;
}

}  // namespace lt
