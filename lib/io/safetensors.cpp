// safetensors: an 8-byte little-endian header length N, N bytes of JSON, then
// the data buffer the header's data_offsets index into. The loader checks the
// whole header (types, dtypes, sizes, a gap-free and overlap-free cover of the
// buffer) before it allocates anything, so a bad file fails with one line that
// names the problem; then it reads the buffer once, front to back, straight
// into the tensors (F32) or through one scratch buffer (F16, BF16).
#include "io/safetensors.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "backend/bf16.h"

namespace lt {
namespace {

using json = nlohmann::json;
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian data, read here without byte swapping");

// The reference implementation refuses larger headers too; anything past it
// means the first 8 bytes are not a header length at all.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
const char* const kMetadataKey = "__metadata__";

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error(path + ": " + problem);
}

// A JSON value for a message, kept short: a header may nest arrays a million
// deep (dump() would recurse that deep) or hold megabytes in one string.
std::string shown(const json& j) {
  constexpr size_t kMaxChars = 80;
  bool flat = j.is_primitive() || (j.is_array() && j.size() <= 16);
  if (j.is_array())
    for (const json& x : j) flat = flat && x.is_primitive() && !x.is_string();
  if (!flat) return "a JSON " + std::string(j.type_name()) + " of " + std::to_string(j.size()) + " elements";
  std::string text = j.dump();
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

enum class FileDType { f32, f16, bf16 };

struct Entry {
  std::string name;
  FileDType dtype;
  Shape shape;
  uint64_t begin, end;  // byte range in the data buffer
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IEEE half to float: every half is exactly a float (subnormals become normal
// floats, inf stays inf, a NaN keeps its payload's top bits).
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return from_bits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = std::ldexp(float(mantissa), -24);
  return sign ? -magnitude : magnitude;
}

std::string dims_str(const std::vector<uint64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string range_str(const Entry& e) { return dims_str({e.begin, e.end}); }

Entry parse_entry(const std::string& path, const std::string& name, const json& j,
                  uint64_t buffer_bytes) {
  const std::string what = "tensor '" + name + "'";
  if (!j.is_object())
    fail(path, what + " is a JSON " + j.type_name() +
                   ", not an object with dtype, shape and data_offsets");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!j.contains(key)) fail(path, what + " has no '" + key + "'");

  Entry e;
  e.name = name;
  const json& dtype = j["dtype"];
  if (!dtype.is_string()) fail(path, what + ": 'dtype' must be a string, got " + shown(dtype));
  const std::string d = dtype.get<std::string>();
  uint64_t element_bytes;
  if (d == "F32") e.dtype = FileDType::f32, element_bytes = 4;
  else if (d == "F16") e.dtype = FileDType::f16, element_bytes = 2;
  else if (d == "BF16") e.dtype = FileDType::bf16, element_bytes = 2;
  else fail(path, what + " has dtype '" + d + "', which lt cannot read (supported: F32, F16, BF16)");

  const json& shape = j["shape"];
  if (!shape.is_array()) fail(path, what + ": 'shape' must be an array of integers, got " + shown(shape));
  if (shape.size() > Shape::kMaxDims)
    fail(path, what + " has " + std::to_string(shape.size()) + " dimensions; lt's tensors have at most " +
                   std::to_string(Shape::kMaxDims));
  uint64_t bytes = element_bytes;
  for (const json& dim : shape) {
    if (!dim.is_number_integer())
      fail(path, what + ": 'shape' must be an array of integers, got " + shown(shape));
    if (dim.is_number_unsigned() ? dim.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
                                 : dim.get<int64_t>() < 0)
      fail(path, what + " has a " + (dim.is_number_unsigned() ? "too large" : "negative") +
                     " dimension in shape " + shown(shape));
    const uint64_t n = dim.get<uint64_t>();
    if (n != 0 && bytes > std::numeric_limits<uint64_t>::max() / n)
      fail(path, what + " has shape " + shown(shape) + ", too large to address");
    bytes *= n;
    e.shape.push_back(int64_t(n));
  }

  const json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail(path, what + ": 'data_offsets' must be two non-negative integers [begin, end], got " +
                   shown(offsets));
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end) fail(path, what + " has data_offsets " + range_str(e) + " that end before they begin");
  if (e.end > buffer_bytes)
    fail(path, what + " has data_offsets " + range_str(e) + " past the end of the data buffer (" +
                   std::to_string(buffer_bytes) + " bytes): the file may be truncated");
  if (e.end - e.begin != bytes)
    fail(path, what + " is " + d + " of shape " + shown(shape) + " = " + std::to_string(bytes) +
                   " bytes, but its data_offsets " + range_str(e) + " hold " +
                   std::to_string(e.end - e.begin) + " bytes");
  // lt tensors have at least one axis: a scalar is read as [1].
  if (e.shape.empty()) e.shape = {1};
  return e;
}

// The format requires the entries to tile the buffer exactly: no overlap, no hole.
void check_cover(const std::string& path, std::vector<Entry>& entries, uint64_t buffer_bytes) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.begin < pos)
      fail(path, "tensors '" + entries[i - 1].name + "' " + range_str(entries[i - 1]) + " and '" +
                     e.name + "' " + range_str(e) + " overlap in the data buffer");
    if (e.begin > pos)
      fail(path, "bytes " + dims_str({pos, e.begin}) + " of the data buffer, before tensor '" +
                     e.name + "', belong to no tensor (the format requires the buffer fully covered)");
    pos = e.end;
  }
  if (pos != buffer_bytes)
    fail(path, "bytes " + dims_str({pos, buffer_bytes}) +
                   " at the end of the data buffer belong to no tensor (the format requires the "
                   "buffer fully covered)");
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& j) {
  if (!j.is_object())
    fail(path, std::string("'") + kMetadataKey + "' is a JSON " + j.type_name() +
                   ", not an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string())
      fail(path, "metadata '" + key + "' is " + shown(value) + ", but metadata values must be strings");
    out[key] = value.get<std::string>();
  }
  return out;
}

void read_exactly(const std::string& path, std::FILE* f, void* dst, size_t bytes) {
  if (bytes != 0 && std::fread(dst, 1, bytes, f) != bytes)
    fail(path, std::string("read failed: ") +
                   (std::ferror(f) ? std::strerror(errno) : "the file ended early (changed while reading?)"));
}

// The whole file mapped copy-on-write (a tensor may be changed in place;
// the file never is), unmapped with its last view; null when it cannot be.
// Not populated: populating a writable private mapping copies every page
// at once, where reading maps the page cache's own and a write copies one.
std::shared_ptr<void> map_file(std::FILE* f, uint64_t size) {
  struct stat st {};
  if (size == 0 || fstat(fileno(f), &st) != 0 || uint64_t(st.st_size) != size) return nullptr;  // changed since
  void* p = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fileno(f), 0);
  if (p == MAP_FAILED) return nullptr;
  return std::shared_ptr<void>(p, [size](void* q) { munmap(q, size_t(size)); });
}

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_reason(const json::exception& e) {
  const std::string message = e.what();
  const size_t end = message.find("] ");
  return end == std::string::npos ? message : message.substr(end + 2);
}

// Why the first bytes are not a safetensors header, with a hint where we know the format.
std::string not_safetensors(const std::string& start, uint64_t header_bytes) {
  std::string why = "does not look like a safetensors file: its first 8 bytes give a header length of " +
                    std::to_string(header_bytes) + " bytes (the limit is 100 MB)";
  if (start.compare(0, 4, "PK\x03\x04") == 0)
    why += "; it is a zip archive, as torch.save writes: export with safetensors.torch.save_file";
  return why;
}

// The file of `size` bytes read through `file` (a file on disk, or bytes in
// memory through fmemopen); errors name `path`.
Checkpoint read_safetensors(const std::string& path, const FilePtr& file, uint64_t size) {
  char first[32];
  const size_t got = std::fread(first, 1, std::min<uint64_t>(size, sizeof first), file.get());
  const std::string start(first, got);
  if (start.rfind("version https://git-lfs", 0) == 0)
    fail(path, "is a Git LFS pointer, not the weights: run git lfs pull");
  if (size < 8)
    fail(path, "is " + std::to_string(size) + " bytes, too short for the 8-byte header length: truncated");
  uint64_t header_bytes;
  std::memcpy(&header_bytes, first, 8);
  if (header_bytes > kMaxHeaderBytes) fail(path, not_safetensors(start, header_bytes));
  if (header_bytes == 0) fail(path, "header length is 0: not a safetensors file");
  if (header_bytes > size - 8)
    fail(path, "header length " + std::to_string(header_bytes) + " bytes runs past the end of the file (" +
                   std::to_string(size) + " bytes): truncated");

  std::string text(header_bytes, '\0');
  if (std::fseek(file.get(), 8, SEEK_SET) != 0) fail(path, std::string("seek failed: ") + std::strerror(errno));
  read_exactly(path, file.get(), text.data(), text.size());
  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, "header is not valid JSON (byte " + std::to_string(e.byte) + " of " +
                   std::to_string(header_bytes) + "): " + json_reason(e));
  } catch (const json::exception& e) {
    // Valid syntax the parser still refuses: a number such as 1e999 that no
    // double holds throws out_of_range (an outside fuzz run found it escaping).
    fail(path, "header cannot be read as JSON: " + json_reason(e));
  }
  if (!header.is_object()) fail(path, std::string("header is a JSON ") + header.type_name() + ", not an object");

  Checkpoint ck;
  ck.path = path;
  const uint64_t buffer_bytes = size - 8 - header_bytes;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) ck.metadata = parse_metadata(path, value);
    else entries.push_back(parse_entry(path, name, value, buffer_bytes));
  }
  check_cover(path, entries, buffer_bytes);

  // Sorted by offset and gap-free, so the buffer is read once, in order.
  // float32 tensors are views of the file mapped copy-on-write (loading a
  // model then copies its weights once, into its parameters), or read when
  // the file cannot be mapped or a tensor's start is not a float's.
  std::shared_ptr<void> mapped = map_file(file.get(), size);
  const uint64_t data_start = 8 + header_bytes;
  std::vector<uint16_t> scratch;
  for (const Entry& e : entries) {
    if (e.dtype == FileDType::f32 && mapped && (data_start + e.begin) % alignof(float) == 0) {
      char* at = static_cast<char*>(mapped.get()) + data_start + e.begin;
      ck.tensors.emplace(e.name, Tensor::wrap(at, e.shape, Device::cpu, DType::f32, mapped));
      continue;
    }
    if (std::fseek(file.get(), long(data_start + e.begin), SEEK_SET) != 0)
      fail(path, std::string("seek failed: ") + std::strerror(errno));
    Tensor t = Tensor::empty(e.shape);
    const int64_t n = t.numel();
    if (e.dtype == FileDType::f32) {
      read_exactly(path, file.get(), t.data(), t.nbytes());
    } else {
      if (scratch.size() < size_t(n)) scratch.resize(n);
      read_exactly(path, file.get(), scratch.data(), size_t(n) * 2);
      float* out = t.data();
      const uint16_t* in = scratch.data();
      if (e.dtype == FileDType::f16) {
#pragma omp parallel for if (n >= (1 << 16))
        for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
      } else {
#pragma omp parallel for if (n >= (1 << 16))
        for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
      }
    }
    ck.tensors.emplace(e.name, t);
  }
  return ck;
}

// The header, then every tensor's bytes, through `write`; errors name `path`.
template <class Write>
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata, Write&& write) {
  json header = json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {  // std::map: sorted by name
    if (name == kMetadataKey) fail(path, std::string("'") + kMetadataKey + "' is reserved, not a tensor name");
    if (!t.defined()) fail(path, "tensor '" + name + "' is undefined");
    if (t.dtype() != DType::f32)
      fail(path, "tensor '" + name + "' is " + dtype_name(t.dtype()) + "; checkpoints hold float32 tensors only");
    header[name] = {{"dtype", "F32"},
                    {"shape", t.shape()},
                    {"data_offsets", json::array({offset, offset + t.nbytes()})}};
    offset += t.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::type_error&) {
    fail(path, "a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t header_bytes = text.size();
  write(&header_bytes, 8);
  write(text.data(), text.size());
  for (const auto& [name, t] : tensors) {
    const Tensor host = t.to(Device::cpu);
    write(host.data(), host.nbytes());
  }
}

}  // namespace

Checkpoint load_safetensors(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(path, "is a directory, not a safetensors file");
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) fail(path, std::string("cannot open: ") + std::strerror(errno));
  const uint64_t size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read its size: " + ec.message());
  return read_safetensors(path, file, size);
}

Checkpoint parse_safetensors(const std::string& name, const void* data, size_t size) {
  if (size == 0) fail(name, "is 0 bytes, too short for the 8-byte header length: truncated");
  FilePtr file(fmemopen(const_cast<void*>(data), size, "rb"));
  if (!file) fail(name, std::string("cannot be read: ") + std::strerror(errno));
  return read_safetensors(name, file, size);
}

std::string safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::string out;
  write_safetensors("safetensors bytes", tensors, metadata, [&](const void* p, size_t bytes) {
    out.append(static_cast<const char*>(p), bytes);
  });
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Write beside the target and rename over it: readers see the old file or the new one.
  const std::string tmp = path + ".tmp";
  FilePtr file(std::fopen(tmp.c_str(), "wb"));
  if (!file) fail(path, "cannot write " + tmp + ": " + std::strerror(errno));
  bool done = false;
  struct RemoveUnlessDone {
    const std::string& tmp;
    const bool& done;
    ~RemoveUnlessDone() {
      if (!done) std::remove(tmp.c_str());
    }
  } guard{tmp, done};
  auto write = [&](const void* p, size_t bytes) {
    if (bytes != 0 && std::fwrite(p, 1, bytes, file.get()) != bytes)
      fail(path, "cannot write " + tmp + ": " + std::strerror(errno));
  };
  write_safetensors(path, tensors, metadata, write);
  if (std::fflush(file.get()) != 0 || fsync(fileno(file.get())) != 0)
    fail(path, "cannot write " + tmp + ": " + std::strerror(errno));
  if (std::fclose(file.release()) != 0) fail(path, "cannot write " + tmp + ": " + std::strerror(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail(path, "cannot rename " + tmp + " to it: " + std::strerror(errno));
  done = true;
}

const Tensor& Checkpoint::get(const std::string& name, const Shape& expected) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) fail(path, "missing tensor '" + name + "'");
  if (it->second.shape() != expected)
    fail(path, "tensor '" + name + "' has shape " + shape_str(it->second.shape()) + ", the config needs " +
                   shape_str(expected));
  return it->second;
}

std::string Checkpoint::meta(const std::string& key) const {
  auto it = metadata.find(key);
  if (it == metadata.end()) fail(path, "missing metadata '" + key + "'");
  return it->second;
}

std::string Checkpoint::meta(const std::string& key, const std::string& fallback) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? fallback : it->second;
}

int64_t Checkpoint::meta_int(const std::string& key) const {
  const std::string value = meta(key);
  int64_t out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, err] = std::from_chars(value.data(), end, out);
  if (value.empty() || err != std::errc() || ptr != end)
    fail(path, "metadata '" + key + "' is '" + value + "', not an integer");
  return out;
}

double Checkpoint::meta_double(const std::string& key) const {
  const std::string value = meta(key);
  char* end = nullptr;
  errno = 0;
  const double out = std::strtod(value.c_str(), &end);
  if (value.empty() || std::isspace(static_cast<unsigned char>(value[0])) || end != value.c_str() + value.size() ||
      errno == ERANGE || !std::isfinite(out))
    fail(path, "metadata '" + key + "' is '" + value + "', not a finite number");
  return out;
}

}  // namespace lt
