// --- embedding.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// The position of the first of n ids outside [0, V), with its value in *bad_id,
// or -1 when all are valid. Waits for the GPU: the answer comes back to the host.
int64_t embedding_find_bad_id(const int32_t* ids, int64_t n, int64_t V, int32_t* bad_id);
// y[i, :] = table[ids[i], :] for n valid ids, rows of C floats.
void embedding_forward(const int32_t* ids, const float* table, float* y, int64_t n, int64_t C);
// dtable[ids[i], :] += dy[i, :] (atomicAdd: ids may repeat).
void embedding_backward(const int32_t* ids, const float* dy, float* dtable, int64_t n, int64_t C);
}  // namespace lt::kernels
