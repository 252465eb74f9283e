// Device discovery, memory and the cuBLAS handles. Uses only the runtime API
// (cudart is linked statically; the driver library is never linked directly).
#include <cstdio>

#include "cuda_check.cuh"
#include "kernels.h"

namespace lt::kernels {

std::string unavailable_reason() {
  static const std::string reason = [] {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error
      return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    }
    if (n == 0) return std::string("no usable CUDA device: the runtime reports 0 GPUs");
    return std::string();
  }();
  return reason;
}

std::string device_name() {
  cudaDeviceProp prop{};
  int dev = 0;
  LT_CUDA_CHECK(cudaGetDevice(&dev));
  LT_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return prop.name;
}

void* malloc(size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    const std::string what = "CUDA out of memory allocating " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(err);
    if (err == cudaErrorMemoryAllocation) throw lt::OutOfMemory(what);
    throw lt::Error(what);
  }
  return p;
}

void free(void* p) noexcept {
  if (p) cudaFree(p);
}

cudaStream_t stream() {
  // Blocking (not cudaStreamNonBlocking): work that a library puts on the
  // legacy default stream stays ordered with ours.
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    LT_CUDA_CHECK(cudaStreamCreate(&created));
    return created;
  }();
  return s;
}

// Host copies wait for the stream: the host reads (or reuses) its buffer next.
void memcpy_h2d(void* dst, const void* src, size_t bytes) {
  LT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()));
  LT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}
void memcpy_d2h(void* dst, const void* src, size_t bytes) {
  LT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
  LT_CUDA_CHECK(cudaStreamSynchronize(stream()));
}
void memcpy_d2d(void* dst, const void* src, size_t bytes) {
  LT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
}
void memset_zero(void* p, size_t bytes) { LT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream())); }
void synchronize() { LT_CUDA_CHECK(cudaDeviceSynchronize()); }

// Bumped whenever a scratch buffer moves: a captured graph that may hold the
// old address must not be replayed.
static uint64_t scratch_epoch = 0;

float* scratch(size_t floats, int slot) {
  static float* buf[kScratchSlots] = {};
  static size_t cap[kScratchSlots] = {};
  if (slot < 0 || slot >= kScratchSlots) throw lt::Error("scratch: no slot " + std::to_string(slot));
  if (floats > cap[slot]) {
    if (buf[slot]) LT_CUDA_CHECK(cudaFree(buf[slot]));
    ++scratch_epoch;
    buf[slot] = static_cast<float*>(malloc(floats * sizeof(float)));
    cap[slot] = floats;
  }
  return buf[slot];
}

cublasHandle_t cublas() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    LT_CUBLAS_CHECK(cublasCreate(&h));
    LT_CUBLAS_CHECK(cublasSetStream(h, stream()));
    // Full fp32; linear_backward asks for TF32 per call.
    LT_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    return h;
  }();
  return handle;
}

cublasLtHandle_t cublas_lt() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    LT_CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

namespace {
struct Graph {
  cudaGraphExec_t exec = nullptr;
  uint64_t epoch = 0;
};
}  // namespace

void graph_capture_begin() {
  LT_CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
}

void* graph_capture_end() {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream(), &graph);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = ended == cudaSuccess ? cudaGraphInstantiate(&exec, graph, 0) : ended;
  if (graph) cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    cudaGetLastError();  // an invalidated capture leaves its error behind
    return nullptr;
  }
  return new Graph{exec, scratch_epoch};
}

bool graph_launch(void* graph) {
  auto* g = static_cast<Graph*>(graph);
  if (g->epoch != scratch_epoch) return false;
  LT_CUDA_CHECK(cudaGraphLaunch(g->exec, stream()));
  return true;
}

void graph_free(void* graph) noexcept {
  auto* g = static_cast<Graph*>(graph);
  if (!g) return;
  cudaGraphExecDestroy(g->exec);
  delete g;
}

}  // namespace lt::kernels
