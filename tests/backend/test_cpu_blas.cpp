// SingleThreadedBlas inside and outside parallel regions: only the thread
// that opens a region may change OpenBLAS's thread count (two replicas doing
// it at once corrupted OpenBLAS's buffer table in long training runs).
#include <omp.h>

#include "backend/cpu_blas.h"
#include "test_util.h"

using namespace lt;

TEST_CASE("SingleThreadedBlas changes OpenBLAS's thread count only outside parallel regions") {
  const int threads = num_threads();
  set_num_threads(2);
  int seen[2] = {-1, -1}, team = 0;
  {
    cpu::SingleThreadedBlas outer;
    CHECK(openblas_get_num_threads() == 1);
#pragma omp parallel num_threads(2)
    {
      { cpu::SingleThreadedBlas inner; }  // as an op inside a training replica
#pragma omp barrier
      seen[omp_get_thread_num()] = openblas_get_num_threads();
#pragma omp single
      team = omp_get_num_threads();
    }
  }
  CHECK(openblas_get_num_threads() == 2);
  set_num_threads(threads);
  REQUIRE(team == 2);  // the region really ran on two threads
  CHECK(seen[0] == 1);
  CHECK(seen[1] == 1);
}
