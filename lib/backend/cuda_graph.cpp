#include "backend/cuda_graph.h"

#include "backend/device.h"
#include "common/error.h"
#ifdef LT_WITH_CUDA
#include "backend/cuda_module.h"
#endif

namespace lt {

static uint64_t g_replays = 0;  // atomic-free: steps are launched from one thread at a time
uint64_t CudaGraph::replays() { return g_replays; }

void CudaGraph::release() {
#ifdef LT_WITH_CUDA
  if (graph_) cuda::graph_free(graph_);
#endif
  graph_ = nullptr;
}

void CudaGraph::run(const std::vector<uintptr_t>& key, const std::function<void()>& work) {
#ifdef LT_WITH_CUDA
  if (refused_ || !cuda_graphs()) return work();
  // A replay is refused when a scratch buffer has moved since the recording.
  if (graph_ && key == recorded_ && cuda::graph_launch(graph_)) {
    ++g_replays;
    return;
  }
  release();
  if (key != seen_) {
    seen_ = key;
    return work();
  }
  cuda::graph_capture_begin();
  try {
    work();
  } catch (const Error&) {
    if (void* g = cuda::graph_capture_end()) cuda::graph_free(g);  // recorded, not run
    refused_ = true;
    return work();
  }
  graph_ = cuda::graph_capture_end();
  if (!graph_ || !cuda::graph_launch(graph_)) {
    release();
    refused_ = true;
    return work();
  }
  recorded_ = key;
  ++g_replays;
#else
  (void)key;
  work();
#endif
}

}  // namespace lt
