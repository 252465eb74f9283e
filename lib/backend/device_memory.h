// Raw memory per device, used by Tensor. Counts bytes for memory_peak().
#pragma once
#include <cstddef>

#include "backend/device.h"

namespace lt {
void* device_alloc(Device d, size_t bytes);
void device_free(Device d, void* p, size_t bytes) noexcept;
void device_copy(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes);
void device_zero(Device d, void* p, size_t bytes);
}  // namespace lt
