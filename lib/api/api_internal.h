// What the C API's handles hold, and the guard every entry point runs in: no
// exception crosses lt.h, each failure sets the thread's message.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "common/error.h"
#include "lt.h"
#include "model/image_generation.h"
#include "model/image_model.h"
#include "model/sequence_model.h"

struct lt_model {
  std::string path, family;
  lt::Device device = lt::Device::cpu;
  lt::Precision precision;          // of generation (lt_model_options): the state API and images
  bool step_prepared = false;       // the model's step packed at `precision` (lt_state_new)
  std::unique_ptr<lt::SequenceModel> sequence;  // the model, of any family
  std::optional<lt::ImageModel> image;          // what the image family adds, over it
  // lt_image_sample's and lt_image_complete's, kept while the batch size stays.
  std::unique_ptr<lt::ImageGenerator> generator;
  std::string weights_checksum;  // hex, computed on first use: the API never changes the weights
  lt::SequenceModel& core() { return *sequence; }
  const lt::SequenceModel& core() const { return *sequence; }
};

struct lt_state {
  lt_model* model = nullptr;
  lt::RecurrentState state;  // knows its position
  lt::Tensor tokens, heads;  // on the model's device: one step's, or the last chunk's
};

namespace lt::api {

void set_error(const std::string& message);

// "fp32", "bf16", "tf32" or "bf16+tf32" (what `what` names) as the tools' --bf16 and --tf32 flags.
void parse_precision(const char* text, const char* what, bool& bf16, bool& tf32);

// A NULL pointer or an out-of-range size given to the API.
struct ArgumentError : Error {
  using Error::Error;
};
template <class T>
void require(T* p, const char* what) {
  if (p == nullptr) throw ArgumentError(std::string(what) + " is NULL");
}

// n values copied into memory the caller frees with free() (the API's
// *_free functions); at least one element, so that a NULL means failure.
template <class T>
T* caller_copy(const T* data, size_t n) {
  auto* out = static_cast<T*>(std::malloc(std::max<size_t>(1, n) * sizeof(T)));
  if (!out) throw std::bad_alloc();
  std::copy(data, data + n, out);
  return out;
}

template <class F>
lt_status guarded(F&& f) noexcept {
  try {
    f();
    return LT_OK;
  } catch (const ArgumentError& e) {
    set_error(e.what());
    return LT_ERROR_ARGUMENT;
  } catch (const std::bad_alloc&) {
    set_error("out of memory");
    return LT_ERROR_MEMORY;
  } catch (const std::exception& e) {
    set_error(e.what());
    return LT_ERROR;
  } catch (...) {
    set_error("unknown error");
    return LT_ERROR;
  }
}

}  // namespace lt::api
