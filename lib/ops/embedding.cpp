// Embedding lookup: rows of a [V, C] table gathered by int32 ids. Ids are
// validated before any row is read, on the host for CPU tensors and by a
// device-side search on the GPU, so a bad id is an lt::Error, never a fault.
#include <omp.h>

#include <cstring>

#include "backend/dispatch.h"
#include "ops/ops.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 14;

// Sets pos to the first position whose id is outside [0, V) (and id to it), or pos = -1.
void find_bad_id(const Tensor& ids, int64_t V, int64_t& pos, int32_t& id) {
  if (ids.device() == Device::cuda) LT_ON_CUDA(pos = cuda::embedding_find_bad_id(ids.data_i32(), ids.numel(), V, &id));
  const int32_t* p = ids.data_i32();
  const int64_t n = ids.numel();
  int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    if ((p[i] < 0 || p[i] >= V) && i < first) first = i;
  pos = first < n ? first : -1;
  if (pos >= 0) id = p[pos];
}

struct EmbeddingDims {
  int64_t n, V, C;
};

// ids int32 [...], table/dtable [V, C], rows y/dy [..., C]; throws on a bad id.
EmbeddingDims embedding_dims(const Tensor& ids, const Tensor& table, const Tensor& rows, const char* what) {
  // A token model's every step: messages are built only on failure.
  if (ids.dtype() != DType::i32)
    throw Error(std::string(what) + ": ids must be int32, got " + dtype_name(ids.dtype()) + " " + shape_str(ids.shape()));
  if (table.ndim() != 2) throw Error(std::string(what) + ": table must be [V, C], got " + shape_str(table.shape()));
  EmbeddingDims d{ids.numel(), table.dim(0), table.dim(1)};
  Shape expected = ids.shape();
  expected.push_back(d.C);
  if (rows.shape() != expected)
    throw Error(std::string(what) + ": ids " + shape_str(ids.shape()) + " and table " + shape_str(table.shape()) +
                " need rows of shape " + shape_str(expected) + ", got " + shape_str(rows.shape()));
  common_device({&ids, &table, &rows}, what);
  int64_t pos = -1;
  int32_t id = 0;
  find_bad_id(ids, d.V, pos, id);
  if (pos >= 0)
    throw Error(std::string(what) + ": id " + std::to_string(id) + " at position " + std::to_string(pos) +
                " is outside [0, V) for V = " + std::to_string(d.V) + " (table " + shape_str(table.shape()) + ")");
  return d;
}
}  // namespace

void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& y) {
  const EmbeddingDims d = embedding_dims(ids, table, y, "embedding_forward");
  if (ids.device() == Device::cuda)
    LT_ON_CUDA(cuda::embedding_forward(ids.data_i32(), table.data(), y.data(), d.n, d.C));

  const int32_t* ip = ids.data_i32();
  const float* tp = table.data();
  float* yp = y.data();
#pragma omp parallel for schedule(static) if (d.n * d.C >= kParallelMin)
  for (int64_t i = 0; i < d.n; ++i) std::memcpy(yp + i * d.C, tp + ip[i] * d.C, d.C * sizeof(float));
}

// dtable[ids[i]] += dy[i]. Repeated ids collide, so each thread owns the table
// rows id % threads and scans all ids: no atomics, same sums on every run.
void embedding_backward(const Tensor& ids, const Tensor& dy, Tensor& dtable) {
  const EmbeddingDims d = embedding_dims(ids, dtable, dy, "embedding_backward");
  if (ids.device() == Device::cuda)
    LT_ON_CUDA(cuda::embedding_backward(ids.data_i32(), dy.data(), dtable.data(), d.n, d.C));

  const int32_t* ip = ids.data_i32();
  const float* dyp = dy.data();
  float* tp = dtable.data();
  const int64_t C = d.C;
#pragma omp parallel if (d.n * d.C >= kParallelMin)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    for (int64_t i = 0; i < d.n; ++i) {
      if (ip[i] % T != t) continue;
      float* row = tp + ip[i] * C;
      const float* g = dyp + i * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) row[c] += g[c];
    }
  }
}

}  // namespace lt
