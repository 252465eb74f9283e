// A sequence of GPU launches recorded once and replayed as one launch (a
// CUDA graph). Small-batch recurrent steps are bound by launching their
// ~60 kernels, not by running them; a replay pays one launch.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace lt {

class CudaGraph {
 public:
  CudaGraph() = default;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph() { release(); }

  // Runs `work`, which only queues GPU work. A graph bakes in every pointer
  // and size its launches take: `key` must name them all. The first call
  // with a key runs `work` as is (it may allocate or plan), the second
  // records and replays it, later ones replay. Work that cannot be recorded
  // (a host copy, an allocation) runs as is from then on.
  void run(const std::vector<uintptr_t>& key, const std::function<void()>& work);
  // Replays so far in this process, for tests that must see graphs used.
  static uint64_t replays();

 private:
  void release();
  std::vector<uintptr_t> seen_, recorded_;
  void* graph_ = nullptr;
  bool refused_ = false;
};

}  // namespace lt
