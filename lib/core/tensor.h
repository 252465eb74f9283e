// Tensor: a contiguous, row-major buffer of float32, int32 or bfloat16 (the
// recurrent state's compact form) on one device,
// shared by reference (copies of a Tensor alias the same storage; use clone()
// for a deep copy). Views (reshape, rows) alias too. Shapes are int64.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"
#include "common/error.h"
#include "core/shape.h"

namespace lt {

enum class DType { f32, i32, bf16 };
size_t dtype_size(DType t);        // bytes per element
const char* dtype_name(DType t);  // "float32" | "int32" | "bfloat16"
std::string shape_str(const Shape& s);  // "[2, 3, 4]"
int64_t shape_numel(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(const Shape& shape, Device device = Device::cpu, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, Device device = Device::cpu, DType dtype = DType::f32);
  static Tensor from_vector(const std::vector<float>& v, const Shape& shape, Device device = Device::cpu);
  static Tensor from_vector(const std::vector<int32_t>& v, const Shape& shape, Device device = Device::cpu);
  // Wraps memory the caller owns (it must outlive every view of it), or, with
  // an owner, memory that every view keeps alive by holding owner.
  static Tensor wrap(void* data, const Shape& shape, Device device, DType dtype = DType::f32,
                     std::shared_ptr<void> owner = nullptr);

  // A default-constructed Tensor is undefined (used for optional arguments).
  bool defined() const { return !shape_.empty(); }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(i < 0 ? i + ndim() : i); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

  float* data() const;       // checks dtype f32
  int32_t* data_i32() const;  // checks dtype i32
  uint16_t* data_bf16() const;  // checks dtype bf16 (raw bits)
  void* raw() const { return data_; }

  Tensor reshape(const Shape& shape) const;            // same storage, numel must match
  Tensor rows(int64_t begin, int64_t end) const;       // view of a range of the first axis
  Tensor clone() const;
  Tensor to(Device device) const;                       // copy (or *this if already there)
  void copy_from(const Tensor& src);                    // same numel, any devices
  void zero();
  std::vector<float> to_vector() const;
  std::vector<int32_t> to_vector_i32() const;

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  Shape shape_;
  Device device_ = Device::cpu;
  DType dtype_ = DType::f32;
};

// Throws lt::Error "<what>: expected shape [..], got [..]" unless t has that shape.
void check_shape(const Tensor& t, const Shape& expected, const char* what);
// Throws unless all tensors live on the same device; returns that device.
Device common_device(std::initializer_list<const Tensor*> ts, const char* what);

}  // namespace lt
