// How the CPU attention paths spread work over (batch, head) pairs. Each pair
// is a handful of sgemms on strided views of [N, L, H, E] tensors. With at
// least as many pairs as threads, every thread takes whole pairs and calls a
// single-threaded sgemm (no BLAS fork/join per small product); with fewer
// pairs, they run one after another and OpenBLAS threads each sgemm.
#pragma once
#include <omp.h>

#include <cstdint>

#include "backend/cpu_blas.h"

namespace lt::cpu {

struct HeadLoop {
  int workers;          // distinct worker indices body receives: size scratch by it
  bool across_heads;    // false: body may parallelise its own loops (omp ... if(!across_heads))
};

inline HeadLoop plan_head_loop(int64_t pairs) {
  const int threads = num_threads();
  if (threads > 1 && pairs >= threads) return {threads, true};
  return {1, false};
}

// body(pair, worker) for pair in [0, pairs), worker in [0, plan.workers).
template <class Body>
void for_each_head(const HeadLoop& plan, int64_t pairs, Body&& body) {
  if (!plan.across_heads) {
    for (int64_t p = 0; p < pairs; ++p) body(p, 0);
    return;
  }
  SingleThreadedBlas single;
#pragma omp parallel for schedule(static) num_threads(plan.workers)
  for (int64_t p = 0; p < pairs; ++p) body(p, omp_get_thread_num());
}

}  // namespace lt::cpu
