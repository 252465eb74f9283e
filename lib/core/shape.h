// A tensor's dimensions, held inline. Views are made by every op of every
// step (rows, reshape, a parameter's value): a heap vector for each was most
// of a state pool step's allocations (19 a speech position at 448 streams).
// The interface is the part of std::vector's that shapes use.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <type_traits>

namespace lt {

class Shape {
 public:
  static constexpr size_t kMaxDims = 8;
  using value_type = int64_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : Shape(dims.begin(), dims.end()) {}
  explicit Shape(size_t n, int64_t value = 0) {
    fits(n);
    std::fill_n(d_, n, value);
    n_ = uint8_t(n);
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>  // iterators; (n, value) above
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(int64_t(*first));
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](size_t i) { return d_[i]; }
  int64_t operator[](size_t i) const { return d_[i]; }
  int64_t at(size_t i) const {
    if (i >= n_) throw std::out_of_range("dimension index past the shape");
    return d_[i];
  }
  int64_t back() const { return d_[n_ - 1]; }
  int64_t& back() { return d_[n_ - 1]; }
  iterator begin() { return d_; }
  iterator end() { return d_ + n_; }
  const_iterator begin() const { return d_; }
  const_iterator end() const { return d_ + n_; }

  void push_back(int64_t d) {
    fits(size_t(n_) + 1);
    d_[n_++] = d;
  }

  friend bool operator==(const Shape& a, const Shape& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  static void fits(size_t n) {
    if (n > kMaxDims) throw std::length_error("a tensor has at most 8 dimensions");
  }
  int64_t d_[kMaxDims] = {};
  uint8_t n_ = 0;
};

}  // namespace lt
