// Launchers of the CUDA backend, called by lib/ when a tensor lives on the GPU.
// Pointers are device pointers; every launcher checks its launch and throws
// lt::Error on failure. Work goes to one stream of the process, in order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace lt::kernels {

// --- runtime (runtime.cu) ---
std::string unavailable_reason();  // "" when a device is usable
std::string device_name();
void* malloc(size_t bytes);
void free(void* p) noexcept;
void memcpy_h2d(void* dst, const void* src, size_t bytes);
void memcpy_d2h(void* dst, const void* src, size_t bytes);
void memcpy_d2d(void* dst, const void* src, size_t bytes);
void memset_zero(void* p, size_t bytes);
void synchronize();
// Scratch buffers that only grow; valid until the next call with the same
// slot (not thread safe). Slot 1 serves the causal product's segment states,
// which it needs while its caller holds slot 0; slot 2 the recurrent step's
// phi(q), phi(k) buffers, which it holds while a feature map's forward (free
// to use slot 0) fills them.
constexpr int kScratchSlots = 3;
float* scratch(size_t floats, int slot = 0);
// CUDA graphs: the launches between begin and end are recorded, not run, and
// replayed as one launch with the same arguments and pointers. end returns
// null when something in between cannot be captured (a host copy, an
// allocation): the caller then runs its work as usual. graph_launch returns
// false, launching nothing, when a scratch buffer has moved since the capture.
void graph_capture_begin();
void* graph_capture_end();
bool graph_launch(void* graph);
void graph_free(void* graph) noexcept;

// --- linear.cu ---
// y[rows,out] = x[rows,in] W[out,in]^T (+ b), then max(0, .) when relu;
// cuBLASLt with the bias and ReLU in its epilogue. tf32: on the tensor
// cores (compute type 32F_FAST_TF32), else full fp32.
void linear_forward(const float* x, const float* W, const float* b, float* y,
                    int64_t rows, int64_t in, int64_t out, bool relu, bool tf32);
// dx = dy W (if dx), dW += dy^T x, db += colsum(dy) (if db).
void linear_backward(const float* x, const float* W, const float* dy, float* dx, float* dW,
                     float* db, int64_t rows, int64_t in, int64_t out, bool tf32);

}  // namespace lt::kernels

// Op families: each declares its launchers in kernels/<family>.h, which opens
// lt::kernels itself (linear.cu's are above).
#include "activations.h"
#include "causal_linear_attention.h"
#include "collectives.h"
#include "ctc.h"
#include "depthwise_conv.h"
#include "dropout.h"
#include "elementwise.h"
#include "embedding.h"
#include "favor.h"
#include "heads.h"
#include "layernorm.h"
#include "linear_attention.h"
#include "linear_attention_step.h"
#include "lstm_cell.h"
#include "optim.h"
#include "position_code.h"
#include "softmax.h"
#include "softmax_attention.h"
