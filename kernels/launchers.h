// The CUDA backend's interface to the core library: one table of the
// launchers in kernels.h. The backend is a module (liblt-cuda.so, which
// carries cudart and links cuBLAS) that lib/backend/cuda_module.cpp loads
// with dlopen the first time a CUDA device is asked for, so a process that
// never uses a GPU never loads CUDA's libraries; cuBLAS's initialisers alone
// cost over a second at every start. The module exports one C symbol,
// kLaunchersEntry, which returns the table filled with these functions.
#pragma once
#include <cstddef>

#include "kernels.h"

// Every launcher lib/ calls, by name.
#define LT_CUDA_LAUNCHERS(X)                                                                            \
  X(unavailable_reason) X(device_name) X(malloc) X(free) X(memcpy_h2d) X(memcpy_d2h) X(memcpy_d2d)      \
  X(memset_zero) X(synchronize) X(scratch) X(graph_capture_begin) X(graph_capture_end) X(graph_launch)  \
  X(graph_free) X(linear_forward) X(linear_backward) X(relu_forward) X(relu_backward) X(gelu_forward)   \
  X(gelu_backward) X(elu_plus_one_forward) X(elu_plus_one_backward) X(causal_linear_attention_forward)  \
  X(causal_linear_attention_backward) X(causal_linear_attention_continue)                               \
  X(causal_linear_attention_continue_bf16) X(ctc_loss_forward) X(ctc_loss_backward)                     \
  X(depthwise_conv_forward) X(depthwise_conv_backward) X(depthwise_conv_continue) X(dropout_apply)      \
  X(add) X(accumulate) X(copy_columns) X(swap_leading_axes) X(embedding_find_bad_id)                    \
  X(embedding_forward) X(embedding_backward) X(favor_forward) X(favor_backward) X(mol_loss_forward)     \
  X(mol_loss_backward) X(mol_sample) X(categorical_loss_forward) X(categorical_loss_backward)           \
  X(categorical_sample) X(layernorm_forward) X(residual_layernorm_forward) X(layernorm_backward)        \
  X(linear_attention_forward) X(linear_attention_backward) X(linear_attention_step)                     \
  X(linear_attention_step_bf16) X(linear_attention_step_packed) X(linear_attention_step_packed_bf16)    \
  X(lstm_cell_forward) X(lstm_cell_backward) X(moment_update) X(clip_grad_norm_segments)                \
  X(position_code) X(concat_position_forward) X(concat_position_backward) X(softmax_forward)            \
  X(softmax_backward) X(softmax_attention_forward) X(softmax_attention_backward)                        \
  X(softmax_attention_step) X(select_device) X(device_bus_id) X(nccl_unavailable_reason)                \
  X(nccl_unique_id) X(nccl_join) X(nccl_sum)

namespace lt::cuda {

struct Launchers {
#define LT_CUDA_LAUNCHER_MEMBER(name) decltype(&kernels::name) name;
  LT_CUDA_LAUNCHERS(LT_CUDA_LAUNCHER_MEMBER)
#undef LT_CUDA_LAUNCHER_MEMBER
};

// Raised whenever a launcher's signature or the table changes: a module of
// another version is refused by name rather than called with wrong arguments.
inline constexpr int kLaunchersVersion = 5;
inline constexpr const char* kLaunchersEntry = "lt_cuda_launchers";
// The entry's type: the table, or null when version or size differ.
using LaunchersEntry = const Launchers* (*)(int version, size_t size);

}  // namespace lt::cuda
