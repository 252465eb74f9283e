// Tensor storage: 64-byte aligned host memory or cudaMalloc'd device memory,
// with per-device byte counters that lt-bench reads as peak memory.
#include "core/tensor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "backend/device_memory.h"
#include "common/error.h"

namespace lt {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return s.empty() ? 0 : n;
}

size_t dtype_size(DType t) { return t == DType::bf16 ? 2 : 4; }

const char* dtype_name(DType t) {
  return t == DType::f32 ? "float32" : t == DType::i32 ? "int32" : "bfloat16";
}

Tensor Tensor::empty(const Shape& shape, Device device, DType dtype) {
  for (int64_t d : shape)
    if (d < 0) throw Error("negative dimension in shape " + shape_str(shape));
  check(!shape.empty(), "a tensor needs at least one dimension");
  Tensor t;
  t.shape_ = shape;
  t.device_ = device;
  t.dtype_ = dtype;
  size_t bytes = t.nbytes();
  void* p = device_alloc(device, bytes);
  t.storage_ = std::shared_ptr<void>(p, [device, bytes](void* q) { device_free(device, q, bytes); });
  t.data_ = p;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, Device device, DType dtype) {
  Tensor t = empty(shape, device, dtype);
  t.zero();
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& v, const Shape& shape, Device device) {
  check(static_cast<int64_t>(v.size()) == shape_numel(shape),
        "from_vector: " + std::to_string(v.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape, device);
  device_copy(t.data_, device, v.data(), Device::cpu, t.nbytes());
  return t;
}

Tensor Tensor::from_vector(const std::vector<int32_t>& v, const Shape& shape, Device device) {
  check(static_cast<int64_t>(v.size()) == shape_numel(shape),
        "from_vector: " + std::to_string(v.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape, device, DType::i32);
  device_copy(t.data_, device, v.data(), Device::cpu, t.nbytes());
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, Device device, DType dtype, std::shared_ptr<void> owner) {
  Tensor t;
  t.storage_ = std::move(owner);
  t.shape_ = shape;
  t.device_ = device;
  t.dtype_ = dtype;
  t.data_ = data;
  return t;
}

namespace {
void expect_dtype(const Tensor& t, DType want) {
  if (t.dtype() != want)
    throw Error(std::string("expected a ") + dtype_name(want) + " tensor, got " + dtype_name(t.dtype()) +
                " of shape " + shape_str(t.shape()));
}
}  // namespace

float* Tensor::data() const {
  expect_dtype(*this, DType::f32);
  return static_cast<float*>(data_);
}

int32_t* Tensor::data_i32() const {
  expect_dtype(*this, DType::i32);
  return static_cast<int32_t*>(data_);
}

uint16_t* Tensor::data_bf16() const {
  expect_dtype(*this, DType::bf16);
  return static_cast<uint16_t*>(data_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (shape_numel(shape) != numel())  // step loops reshape every call: the message only when it throws
    throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  // Views are taken in step loops: the message is built only on failure.
  if (!(ndim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0]))
    throw Error("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for " +
                shape_str(shape_));
  Tensor t = *this;
  int64_t row = numel() / (shape_[0] ? shape_[0] : 1);
  t.shape_[0] = end - begin;
  t.data_ = static_cast<char*>(data_) + begin * row * dtype_size(dtype_);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, device_, dtype_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(shape_, device, dtype_);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.numel() != numel() || src.dtype_ != dtype_)
    throw Error(std::string("copy_from: ") + dtype_name(src.dtype_) + " " + shape_str(src.shape_) + " into " +
                dtype_name(dtype_) + " " + shape_str(shape_));
  device_copy(data_, device_, src.data_, src.device_, nbytes());
}

void Tensor::zero() { device_zero(device_, data_, nbytes()); }

std::vector<float> Tensor::to_vector() const {
  std::vector<float> v(numel());
  device_copy(v.data(), Device::cpu, data(), device_, nbytes());
  return v;
}

std::vector<int32_t> Tensor::to_vector_i32() const {
  std::vector<int32_t> v(numel());
  device_copy(v.data(), Device::cpu, data_i32(), device_, nbytes());
  return v;
}

void check_shape(const Tensor& t, const Shape& expected, const char* what) {
  if (t.shape() != expected)  // the message only when it throws: step loops check every call
    throw Error(std::string(what) + ": expected shape " + shape_str(expected) + ", got " + shape_str(t.shape()));
}

Device common_device(std::initializer_list<const Tensor*> ts, const char* what) {
  Device d = Device::cpu;
  bool first = true;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (first) d = t->device(), first = false;
    if (t->device() != d) throw Error(std::string(what) + ": tensors on different devices");  // every op's call: no message before
  }
  require_device(d);
  return d;
}

}  // namespace lt
