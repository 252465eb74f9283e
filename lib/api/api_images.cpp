// lt.h: drawing subpixels from an image model's heads, whole images and completions.
#include <cstring>
#include <vector>

#include "api_internal.h"
#include "lt/image_generation.h"
#include "lt/random.h"

namespace {
lt::ImageModel& image_model(lt_model* m, const char* what) {
  lt::api::require(m, "model");
  if (!m->image) throw lt::Error(std::string(what) + ": " + m->path + " is a " + m->family + " model, not an image model");
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
    const int64_t W = m.config().head_width();
    lt::Tensor head = lt::Tensor::wrap(const_cast<float*>(heads), {rows, W}, lt::Device::cpu);
    lt::Tensor out = lt::Tensor::wrap(bytes, {rows}, lt::Device::cpu, lt::DType::i32);
    if (m.device() == lt::Device::cpu) return m.sample(head, seed, position, out);
    lt::Tensor dev_out = lt::Tensor::empty({rows}, m.device(), lt::DType::i32);
    m.sample(head.to(m.device()), seed, position, dev_out);
    out.copy_from(dev_out);
  });
}

lt_status lt_image_sample(lt_model* model, int64_t count, uint64_t seed, uint8_t* pixels) {
  return lt::api::guarded([&] {
    lt::ImageModel& m = image_model(model, "lt_image_sample");
    lt::api::require(pixels, "pixels");
    if (count < 1) throw lt::api::ArgumentError("lt_image_sample: count must be >= 1, got " + std::to_string(count));
    lt::ImageGenerator generator(m, count);
    std::vector<uint8_t> out;
    // lt-sample-image's first batch draws from this seed.
    generator.generate(lt::splitmix64(seed), out);
    std::memcpy(pixels, out.data(), out.size());
  });
}

lt_status lt_image_complete(lt_model* model, const uint8_t* values, const uint8_t* known, int64_t count, uint64_t seed,
                            uint8_t* pixels) {
  return lt::api::guarded([&] {
    lt::ImageModel& m = image_model(model, "lt_image_complete");
    lt::api::require(values, "values");
    lt::api::require(known, "known");
    lt::api::require(pixels, "pixels");
    if (count < 1) throw lt::api::ArgumentError("lt_image_complete: count must be >= 1, got " + std::to_string(count));
    const int64_t S = m.config().subpixels();
    lt::ImageConstraint constraint;
    constraint.values.assign(values, values + S);
    constraint.known.assign(known, known + S);
    lt::ImageGenerator generator(m, count);
    std::vector<uint8_t> out;
    // lt-complete's first input draws from this seed.
    generator.generate(lt::splitmix64(seed), out, &constraint);
    std::memcpy(pixels, out.data(), out.size());
  });
}
