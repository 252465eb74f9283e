// lt.h: the recurrent state as a value (new, fork, reset, step, continue,
// save, load). The state remembers its model and position; a saved state
// carries the model's architecture and a checksum of its weights, so that
// loading it into another model fails with a line saying what differs.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api_internal.h"
#include "lt/safetensors.h"
#include "lt/world.h"

namespace {

using lt::api::ArgumentError;
using lt::api::require;

// The model's architecture as saved states record it (dropout is a training setting).
std::map<std::string, std::string> architecture(const lt_model& m) {
  std::map<std::string, std::string> a = m.core().metadata();
  a.erase("dropout");
  return a;
}

const std::string& weights_checksum(lt_model& m) {
  if (m.weights_checksum.empty()) {
    char hex[20];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, lt::checksum(m.core().params().values()));
    m.weights_checksum = hex;
  }
  return m.weights_checksum;
}

// Host memory the caller owns as a tensor, on the CPU; on a GPU, the state's
// buffer that the caller's bytes are copied into (or out of).
lt::Tensor caller_buffer(lt_state& s, lt::Tensor& staging, void* data, const lt::Shape& shape, lt::DType dtype) {
  if (s.model->device == lt::Device::cpu) return lt::Tensor::wrap(data, shape, lt::Device::cpu, dtype);
  if (!staging.defined() || staging.shape() != shape) staging = lt::Tensor::empty(shape, s.model->device, dtype);
  return staging;
}

void check_room(const lt_state& s, int64_t count, const char* what) {
  const int64_t last = s.model->core().config().max_positions;
  if (s.position + count > last)
    throw lt::Error(std::string(what) + ": the state is at position " + std::to_string(s.position) + " and " +
                    std::to_string(count) + " more would pass the model's " + std::to_string(last) + " positions");
}

}  // namespace

lt_status lt_state_new(lt_model* model, int64_t batch, lt_state** state) {
  if (state) *state = nullptr;
  return lt::api::guarded([&] {
    require(model, "model");
    require(state, "state");
    if (batch < 1) throw ArgumentError("lt_state_new: batch must be >= 1, got " + std::to_string(batch));
    auto s = std::make_unique<lt_state>();
    s->model = model;
    s->state = model->core().new_state(batch);
    *state = s.release();
  });
}

lt_status lt_state_fork(const lt_state* state, lt_state** copy) {
  if (copy) *copy = nullptr;
  return lt::api::guarded([&] {
    require(state, "state");
    require(copy, "copy");
    auto s = std::make_unique<lt_state>();
    s->model = state->model;
    s->position = state->position;
    s->state = state->state;
    s->state.buffer = state->state.buffer.clone();
    *copy = s.release();
  });
}

lt_status lt_state_reset(lt_state* state) {
  return lt::api::guarded([&] {
    require(state, "state");
    state->state.buffer.zero();
    state->position = 0;
  });
}

int64_t lt_state_position(const lt_state* state) { return state ? state->position : -1; }
int64_t lt_state_batch(const lt_state* state) { return state ? state->state.batch : -1; }

lt_status lt_state_step(lt_state* state, const int32_t* tokens, float* head) {
  return lt::api::guarded([&] {
    require(state, "state");
    require(tokens, "tokens");
    require(head, "head");
    check_room(*state, 1, "lt_state_step");
    lt::SequenceModel& m = state->model->core();
    const int64_t B = state->state.batch, W = m.config().head.width();
    lt::Tensor in = caller_buffer(*state, state->tokens, const_cast<int32_t*>(tokens), {B}, lt::DType::i32);
    lt::Tensor out = caller_buffer(*state, state->heads, head, {B, W}, lt::DType::f32);
    if (in.raw() != tokens) in.copy_from(lt::Tensor::wrap(const_cast<int32_t*>(tokens), {B}, lt::Device::cpu, lt::DType::i32));
    m.step(state->state, in, state->position, out);
    if (out.raw() != head) lt::Tensor::wrap(head, {B, W}, lt::Device::cpu).copy_from(out);
    ++state->position;
  });
}

lt_status lt_state_continue(lt_state* state, const int32_t* tokens, int64_t count, float* heads) {
  return lt::api::guarded([&] {
    require(state, "state");
    require(tokens, "tokens");
    require(heads, "heads");
    if (count < 1) throw ArgumentError("lt_state_continue: count must be >= 1, got " + std::to_string(count));
    check_room(*state, count, "lt_state_continue");
    lt::SequenceModel& m = state->model->core();
    const int64_t B = state->state.batch, W = m.config().head.width();
    const lt::Tensor host_in = lt::Tensor::wrap(const_cast<int32_t*>(tokens), {B, count}, lt::Device::cpu, lt::DType::i32);
    lt::Tensor host_out = lt::Tensor::wrap(heads, {B, count, W}, lt::Device::cpu);
    lt::Tensor in = host_in, out = host_out;
    if (state->model->device != lt::Device::cpu) {
      in = host_in.to(state->model->device);
      out = lt::Tensor::empty({B, count, W}, state->model->device);
    }
    m.continue_chunk(state->state, in, state->position, out);
    if (out.raw() != heads) host_out.copy_from(out);
    state->position += count;
  });
}

namespace {

// What a saved state holds: its buffer, position, batch, and its model's
// architecture and weight checksum.
std::map<std::string, std::string> state_metadata(const lt_state& s) {
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : architecture(*s.model)) meta["lt.state.model." + k] = v;
  meta["lt.state.weights"] = weights_checksum(*s.model);
  meta["lt.state.position"] = std::to_string(s.position);
  meta["lt.state.batch"] = std::to_string(s.state.batch);
  return meta;
}

// A saved state (a file, or bytes) for `model`: refused, naming ck.path and
// what differs, when it belongs to another model.
std::unique_ptr<lt_state> state_of(lt_model* model, const lt::Checkpoint& ck) {
  const std::string& name = ck.path;
  lt::check(ck.metadata.count("lt.state.batch") != 0, name + ": not a saved state (no lt.state.batch)");
  for (const auto& [k, v] : architecture(*model)) {
    const std::string saved = ck.meta("lt.state.model." + k, "(none)");
    if (saved != v) throw lt::Error(name + ": a state of another model: its " + k + " is " + saved + ", this model's " + v);
  }
  const std::string& mine = weights_checksum(*model);
  if (ck.meta("lt.state.weights", "") != mine)
    throw lt::Error(name + ": a state made with other weights of this architecture (checksum " +
                    ck.meta("lt.state.weights", "(none)") + ", this model's " + mine + ")");
  const int64_t batch = ck.meta_int("lt.state.batch"), position = ck.meta_int("lt.state.position");
  lt::check(batch >= 1 && position >= 0 && position <= model->core().config().max_positions,
            name + ": lt.state.batch or lt.state.position out of range");
  auto s = std::make_unique<lt_state>();
  s->model = model;
  s->state = model->core().new_state(batch);
  s->state.buffer.copy_from(ck.get("state", {s->state.buffer.numel()}));
  s->position = position;
  return s;
}

}  // namespace

lt_status lt_state_save(const lt_state* state, const char* path) {
  return lt::api::guarded([&] {
    require(state, "state");
    require(path, "path");
    lt::save_safetensors(path, {{"state", state->state.buffer}}, state_metadata(*state));
  });
}

lt_status lt_state_load(lt_model* model, const char* path, lt_state** state) {
  if (state) *state = nullptr;
  return lt::api::guarded([&] {
    require(model, "model");
    require(path, "path");
    require(state, "state");
    *state = state_of(model, lt::load_safetensors(path)).release();
  });
}

lt_status lt_state_to_bytes(const lt_state* state, uint8_t** bytes, size_t* size) {
  if (bytes) *bytes = nullptr;
  if (size) *size = 0;
  return lt::api::guarded([&] {
    require(state, "state");
    require(bytes, "bytes");
    require(size, "size");
    const std::string out = lt::safetensors_bytes({{"state", state->state.buffer}}, state_metadata(*state));
    auto* copy = static_cast<uint8_t*>(std::malloc(out.size()));
    if (!copy) throw std::bad_alloc();
    std::memcpy(copy, out.data(), out.size());
    *bytes = copy;
    *size = out.size();
  });
}

lt_status lt_state_from_bytes(lt_model* model, const uint8_t* bytes, size_t size, lt_state** state) {
  if (state) *state = nullptr;
  return lt::api::guarded([&] {
    require(model, "model");
    require(bytes, "bytes");
    require(state, "state");
    *state = state_of(model, lt::parse_safetensors("state bytes", bytes, size)).release();
  });
}

void lt_bytes_free(uint8_t* bytes) { std::free(bytes); }

void lt_state_free(lt_state* state) { delete state; }
