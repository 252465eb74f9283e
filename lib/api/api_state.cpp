// lt.h: the recurrent state as a value (new, fork, reset, step, continue,
// save, load). The state remembers its model and position; a saved state
// carries the model's architecture and a checksum of its weights, so that
// loading it into another model fails with a line saying what differs, and
// a checksum of its bytes, so that a damaged one is refused.
#include <zlib.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api_internal.h"
#include "io/file_bytes.h"
#include "io/safetensors.h"
#include "train/world.h"

namespace {

using lt::api::ArgumentError;
using lt::api::caller_copy;
using lt::api::require;

// The model's architecture as saved states record it: dropout is a training
// setting, and the family's entries (an image's size and histogram) were
// never part of it, so states saved before still load.
std::map<std::string, std::string> architecture(const lt_model& m) {
  std::map<std::string, std::string> a = m.core().metadata();
  a.erase("dropout");
  for (const auto& [key, value] : m.core().config().family_metadata) a.erase(key);
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

// A state of the model's precision (S in bf16 with "bf16"), its step prepared for it.
lt::RecurrentState new_state(lt_model& m, int64_t batch) {
  if (!m.step_prepared) m.core().prepare_step(m.precision);
  m.step_prepared = true;
  return m.core().new_state(batch, m.precision.state);
}

const char* state_dtype(lt::DType d) { return d == lt::DType::bf16 ? "bf16" : "fp32"; }

// Runs pass(in, out) on the caller's tokens [B, count] and heads
// [B, count, W]: wrapped in place on the CPU; on a GPU, through the state's
// device buffers (reallocated only when the shape changes).
template <class Pass>
void through_buffers(lt_state& s, const int32_t* tokens, float* heads, const lt::Shape& in_shape,
                     const lt::Shape& out_shape, Pass&& pass) {
  lt::Tensor host_in = lt::Tensor::wrap(const_cast<int32_t*>(tokens), in_shape, lt::Device::cpu, lt::DType::i32);
  lt::Tensor host_out = lt::Tensor::wrap(heads, out_shape, lt::Device::cpu);
  const lt::Device d = s.model->device;
  if (d == lt::Device::cpu) return pass(host_in, host_out);
  if (s.tokens.shape() != in_shape) s.tokens = lt::Tensor::empty(in_shape, d, lt::DType::i32);
  if (s.heads.shape() != out_shape) s.heads = lt::Tensor::empty(out_shape, d);
  s.tokens.copy_from(host_in);
  pass(s.tokens, s.heads);
  host_out.copy_from(s.heads);
}

void check_room(const lt_state& s, int64_t count, const char* what) {
  const int64_t last = s.model->core().config().max_positions;
  const int64_t position = s.state.position;
  if (position + count > last)
    throw lt::Error(std::string(what) + ": the state is at position " + std::to_string(position) + " and " +
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
    s->state = new_state(*model, batch);
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
    s->state = state->state.fork();
    *copy = s.release();
  });
}

lt_status lt_state_reset(lt_state* state) {
  return lt::api::guarded([&] {
    require(state, "state");
    state->state.reset();
  });
}

int64_t lt_state_position(const lt_state* state) { return state ? state->state.position : -1; }
int64_t lt_state_batch(const lt_state* state) { return state ? state->state.batch : -1; }

lt_status lt_state_step(lt_state* state, const int32_t* tokens, float* head) {
  return lt::api::guarded([&] {
    require(state, "state");
    require(tokens, "tokens");
    require(head, "head");
    check_room(*state, 1, "lt_state_step");
    lt::SequenceModel& m = state->model->core();
    const int64_t B = state->state.batch, W = m.config().head.width();
    through_buffers(*state, tokens, head, {B}, {B, W},
                    [&](const lt::Tensor& in, lt::Tensor& out) { m.step(state->state, in, out); });
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
    through_buffers(*state, tokens, heads, {B, count}, {B, count, W}, [&](const lt::Tensor& in, lt::Tensor& out) {
      m.continue_chunk(state->state, in, out);
    });
  });
}

namespace {

// What a saved state holds: its buffer, position, batch, and its model's
// architecture and weight checksum.
std::map<std::string, std::string> state_metadata(const lt_state& s) {
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : architecture(*s.model)) meta["lt.state.model." + k] = v;
  meta["lt.state.weights"] = weights_checksum(*s.model);
  meta["lt.state.position"] = std::to_string(s.state.position);
  meta["lt.state.batch"] = std::to_string(s.state.batch);
  meta["lt.state.dtype"] = state_dtype(s.model->precision.state);
  return meta;
}

// The checksum of a saved state: zlib's crc32 of every byte of it (header
// and tensor) with the 8 hex digits of the checksum itself read as
// "00000000", written as lowercase hex into the metadata key lt.state.crc32.
// So a change to any byte, the position's digits or the tensor's alike, is
// found; a truncation too.
constexpr char kChecksumKey[] = "lt.state.crc32";
constexpr char kUnset[] = "00000000";

// Where the checksum's 8 digits start in bytes (a safetensors file whose
// header read_safetensors accepted), or npos when the header has no
// "lt.state.crc32" key. In the JSON header a quote inside a string is
// escaped, so the key's text with its quotes can only be that key.
size_t checksum_at(const std::string& name, const uint8_t* bytes, size_t size) {
  uint64_t header = 0;
  if (size >= 8) std::memcpy(&header, bytes, 8);  // little-endian, as the format says
  lt::check(size >= 8 && header <= size - 8, name + ": not a saved state (its header is cut off)");
  const std::string field = std::string("\"") + kChecksumKey + "\":\"";
  const char* begin = reinterpret_cast<const char*>(bytes) + 8;
  const std::string_view text(begin, header);
  const size_t found = text.find(field);
  if (found == std::string_view::npos) return std::string_view::npos;
  const size_t at = found + field.size();
  lt::check(text.find(field, found + 1) == std::string_view::npos && at + 8 < text.size() && text[at + 8] == '"',
            name + ": damaged: its " + kChecksumKey + " is not one 8-digit value");
  return 8 + at;
}

uint32_t checksum_of(const uint8_t* bytes, size_t size, size_t at) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  c = crc32_z(c, bytes, at);
  c = crc32_z(c, reinterpret_cast<const Bytef*>(kUnset), 8);
  c = crc32_z(c, bytes + at + 8, size - at - 8);
  return uint32_t(c);
}

std::string hex32(uint32_t v) {
  char hex[12];
  std::snprintf(hex, sizeof hex, "%08" PRIx32, v);
  return hex;
}

// The bytes lt_state_save writes: the safetensors file with its checksum.
std::string state_bytes(const lt_state& s) {
  std::map<std::string, std::string> meta = state_metadata(s);
  meta[kChecksumKey] = kUnset;
  std::string out = lt::safetensors_bytes({{"state", s.state.buffer}}, meta);
  auto* bytes = reinterpret_cast<uint8_t*>(out.data());
  const size_t at = checksum_at("state bytes", bytes, out.size());
  lt::check(at != std::string::npos, "state bytes: the checksum was not written");
  out.replace(at, 8, hex32(checksum_of(bytes, out.size(), at)));
  return out;
}

// Refuses bytes (named `name`) whose checksum does not match them, or that
// have none: states saved before lt wrote one cannot be told from damaged
// ones (docs/api.md).
void check_state_checksum(const std::string& name, const uint8_t* bytes, size_t size, const lt::Checkpoint& ck) {
  const size_t at = checksum_at(name, bytes, size);
  if (at == std::string::npos)
    throw lt::Error(name + ": a state without a checksum (" + kChecksumKey +
                    "): damaged, or saved before lt's states carried one; refused, since it cannot be checked");
  const std::string saved(reinterpret_cast<const char*>(bytes) + at, 8);
  const std::string computed = hex32(checksum_of(bytes, size, at));
  if (saved != computed || ck.meta(kChecksumKey, "") != saved)
    throw lt::Error(name + ": damaged: its checksum (" + kChecksumKey + " " + saved + ") does not match its bytes (" +
                    computed + ")");
}

// A saved state (a file, or bytes) for `model`: refused, naming the file or
// "state bytes", when it is damaged or belongs to another model.
std::unique_ptr<lt_state> state_of(lt_model* model, const std::string& name, const uint8_t* bytes, size_t size) {
  const lt::Checkpoint ck = lt::parse_safetensors(name, bytes, size);
  lt::check(ck.metadata.count("lt.state.batch") != 0, name + ": not a saved state (no lt.state.batch)");
  check_state_checksum(name, bytes, size, ck);
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
  const std::string dtype = ck.meta("lt.state.dtype", "fp32"), mine_dtype = state_dtype(model->precision.state);
  if (dtype != mine_dtype)
    throw lt::Error(name + ": a state whose S is " + dtype + "; this model was loaded to step it in " + mine_dtype +
                    " (lt_model_options.precision)");
  auto s = std::make_unique<lt_state>();
  s->model = model;
  s->state = new_state(*model, batch);
  s->state.buffer.copy_from(ck.get("state", {s->state.buffer.numel()}));
  s->state.position = position;
  return s;
}

}  // namespace

lt_status lt_state_save(const lt_state* state, const char* path) {
  return lt::api::guarded([&] {
    require(state, "state");
    require(path, "path");
    const std::string bytes = state_bytes(*state);
    lt::io::write_file_atomically(path, bytes.data(), bytes.size());
  });
}

lt_status lt_state_load(lt_model* model, const char* path, lt_state** state) {
  if (state) *state = nullptr;
  return lt::api::guarded([&] {
    require(model, "model");
    require(path, "path");
    require(state, "state");
    const std::vector<uint8_t> bytes = lt::io::read_file_bytes(path);
    *state = state_of(model, path, bytes.data(), bytes.size()).release();
  });
}

lt_status lt_state_to_bytes(const lt_state* state, uint8_t** bytes, size_t* size) {
  if (bytes) *bytes = nullptr;
  if (size) *size = 0;
  return lt::api::guarded([&] {
    require(state, "state");
    require(bytes, "bytes");
    require(size, "size");
    const std::string out = state_bytes(*state);
    *bytes = caller_copy(reinterpret_cast<const uint8_t*>(out.data()), out.size());
    *size = out.size();
  });
}

lt_status lt_state_from_bytes(lt_model* model, const uint8_t* bytes, size_t size, lt_state** state) {
  if (state) *state = nullptr;
  return lt::api::guarded([&] {
    require(model, "model");
    require(bytes, "bytes");
    require(state, "state");
    *state = state_of(model, "state bytes", bytes, size).release();
  });
}

void lt_bytes_free(uint8_t* bytes) { std::free(bytes); }

void lt_state_free(lt_state* state) { delete state; }
