// lt.h: drawing subpixels from an image model's heads, whole images and completions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "api_internal.h"
#include "common/random.h"
#include "io/png.h"
#include "model/image_batch.h"
#include "model/image_generation.h"

namespace {
lt::ImageModel& image_model(lt_model* m, const char* what) {
  lt::api::require(m, "model");
  if (!m->image) throw lt::Error(std::string(what) + ": " + m->path + " is " + lt::with_article(m->family) + " model, not an image model");
  return *m->image;
}
}  // namespace

lt_status lt_image_draw(lt_model* model, const float* heads, int64_t rows, uint64_t seed, int64_t position,
                        int32_t* bytes) {
  return lt::api::guarded([&] {
    lt::ImageModel& m = image_model(model, "lt_image_draw");
    lt::api::require(heads, "heads");
    lt::api::require(bytes, "bytes");
    if (rows < 1) throw lt::api::ArgumentError("lt_image_draw: rows must be >= 1, got " + std::to_string(rows));
    if (position < 1 || position > m.core().config().max_positions) throw lt::api::ArgumentError("lt_image_draw: position must be in 1.." + std::to_string(m.core().config().max_positions) + " (the subpixel drawn after the first), got " + std::to_string(position));
    const int64_t W = m.config().head_width();
    lt::Tensor head = lt::Tensor::wrap(const_cast<float*>(heads), {rows, W}, lt::Device::cpu);
    lt::Tensor out = lt::Tensor::wrap(bytes, {rows}, lt::Device::cpu, lt::DType::i32);
    if (m.core().device() == lt::Device::cpu) return m.sample(head, seed, position, out);
    lt::Tensor dev_out = lt::Tensor::empty({rows}, m.core().device(), lt::DType::i32);
    m.sample(head.to(m.core().device()), seed, position, dev_out);
    out.copy_from(dev_out);
  });
}

lt_image_options lt_image_default_options(void) { return lt_image_options{}; }

namespace {
// The model's generator for `batch` images, made again only when the batch changes.
lt::ImageGenerator& generator(lt_model* m, int64_t batch) {
  if (!m->generator || m->generator->batch() != batch)
    m->generator = std::make_unique<lt::ImageGenerator>(*m->image, batch, m->precision);
  return *m->generator;
}

// Calls the caller's progress with rows first..first+rows-1 of a batch's pixels.
lt::SubpixelCallback progress_of(const lt_image_options& o, int64_t first, int64_t rows) {
  if (!o.progress) return nullptr;
  return [&o, first, rows](int64_t t, const std::vector<uint8_t>& pixels) {
    o.progress(first, rows, t, pixels.data(), o.user);
  };
}
}  // namespace

lt_status lt_image_sample(lt_model* model, int64_t count, const lt_image_options* options, uint8_t* pixels,
                          double* bits_per_dim) {
  return lt::api::guarded([&] {
    lt::ImageModel& m = image_model(model, "lt_image_sample");
    lt::api::require(pixels, "pixels");
    if (count < 1) throw lt::api::ArgumentError("lt_image_sample: count must be >= 1, got " + std::to_string(count));
    const lt_image_options o = options ? *options : lt_image_default_options();
    if (o.batch < 0) throw lt::api::ArgumentError("lt_image_sample: batch must be >= 0, got " + std::to_string(o.batch));
    const int64_t S = m.config().subpixels(), batch = o.batch > 0 ? o.batch : count;
    lt::ImageGenerator& g = generator(model, batch);
    std::vector<uint8_t> out;
    std::vector<double> nll;
    for (int64_t first = 0; first < count; first += batch) {
      const int64_t rows = std::min(batch, count - first);
      // Batch j draws from its own stream, as lt-sample-image's batch j.
      g.generate(lt::splitmix64(o.seed + uint64_t(first / batch)), out, nullptr, progress_of(o, first, rows),
                 bits_per_dim ? &nll : nullptr);
      std::memcpy(pixels + first * S, out.data(), size_t(rows * S));
      for (int64_t i = 0; bits_per_dim && i < rows; ++i) {
        const double nats = std::accumulate(nll.begin() + i * (S - 1), nll.begin() + (i + 1) * (S - 1), 0.0);
        bits_per_dim[first + i] = nats / double(S - 1) / std::log(2.0);
      }
    }
  });
}

lt_status lt_image_complete(lt_model* model, const uint8_t* values, const uint8_t* known, int64_t count,
                            const lt_image_options* options, uint8_t* pixels) {
  return lt::api::guarded([&] {
    lt::ImageModel& m = image_model(model, "lt_image_complete");
    lt::api::require(values, "values");
    lt::api::require(known, "known");
    lt::api::require(pixels, "pixels");
    if (count < 1) throw lt::api::ArgumentError("lt_image_complete: count must be >= 1, got " + std::to_string(count));
    const lt_image_options o = options ? *options : lt_image_default_options();
    const int64_t S = m.config().subpixels();
    lt::ImageConstraint constraint;
    constraint.values.assign(values, values + S);
    constraint.known.assign(known, known + S);
    std::vector<uint8_t> out;
    // lt-complete's first input draws from this seed.
    generator(model, count).generate(lt::splitmix64(o.seed), out, &constraint, progress_of(o, 0, count));
    std::memcpy(pixels, out.data(), out.size());
  });
}

// ---- continuous batching ----

struct lt_image_batch {
  lt_model* model = nullptr;
  std::unique_ptr<lt::ImageBatch> batch;
};

struct lt_image_job {
  lt_image_batch* batch = nullptr;
  lt::ImageJob* job = nullptr;
};

lt_status lt_image_batch_new(lt_model* model, lt_image_batch** batch) {
  if (batch) *batch = nullptr;
  return lt::api::guarded([&] {
    lt::ImageModel& m = image_model(model, "lt_image_batch_new");
    lt::api::require(batch, "batch");
    auto b = std::make_unique<lt_image_batch>();
    b->model = model;
    b->batch = std::make_unique<lt::ImageBatch>(m, model->precision);
    *batch = b.release();
  });
}

lt_status lt_image_batch_add(lt_image_batch* batch, uint64_t seed, const uint8_t* values, const uint8_t* known,
                             lt_image_job** job) {
  if (job) *job = nullptr;
  return lt::api::guarded([&] {
    lt::api::require(batch, "batch");
    lt::api::require(job, "job");
    if (!values != !known) throw lt::api::ArgumentError("lt_image_batch_add: values and known are both given or both NULL");
    const int64_t S = batch->model->image->config().subpixels();
    lt::ImageConstraint c;
    if (values) {
      c.values.assign(values, values + S);
      c.known.assign(known, known + S);
    }
    auto j = std::make_unique<lt_image_job>();
    j->batch = batch;
    // The seed as lt_image_sample's first batch and lt-complete's first input draw from it.
    j->job = batch->batch->add(lt::splitmix64(seed), values ? &c : nullptr);
    *job = j.release();
  });
}

lt_status lt_image_batch_step(lt_image_batch* batch, int64_t* running) {
  return lt::api::guarded([&] {
    lt::api::require(batch, "batch");
    const int64_t n = batch->batch->step();
    if (running) *running = n;
  });
}

int64_t lt_image_job_decided(const lt_image_job* job) { return job ? job->job->decided : 0; }
const uint8_t* lt_image_job_pixels(const lt_image_job* job) { return job ? job->job->pixels.data() : nullptr; }
int lt_image_job_done(const lt_image_job* job) { return job && job->job->done() ? 1 : 0; }

void lt_image_job_free(lt_image_job* job) {
  if (!job) return;
  lt::api::guarded([&] { job->batch->batch->remove(job->job); });  // cannot fail: the job is its batch's
  delete job;
}

void lt_image_batch_free(lt_image_batch* batch) { delete batch; }

lt_status lt_png_read(const char* path, uint8_t** pixels, int64_t* height, int64_t* width, int64_t* channels) {
  if (pixels) *pixels = nullptr;
  return lt::api::guarded([&] {
    lt::api::require(path, "path");
    lt::api::require(pixels, "pixels");
    lt::api::require(height, "height");
    lt::api::require(width, "width");
    lt::api::require(channels, "channels");
    const lt::Image image = lt::read_png(path);
    *pixels = lt::api::caller_copy(image.pixels.data(), image.pixels.size());
    *height = image.height;
    *width = image.width;
    *channels = image.channels;
  });
}
