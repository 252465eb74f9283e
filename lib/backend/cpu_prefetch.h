// Software prefetch of a range: a caller about to walk memory that other
// work evicted asks for all of it at once, so that the misses overlap
// instead of stalling one after another.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lt {

// Every cache line of [p, p + bytes), from p's own line: a vector's
// elements, or a 24-byte table entry, rarely start on one.
inline void prefetch_bytes(const void* p, size_t bytes) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63), end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t at = first; at < end; at += 64) __builtin_prefetch(reinterpret_cast<const void*>(at));
}

}  // namespace lt
