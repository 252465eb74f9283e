// Devices and their process-wide settings. The CPU backend is OpenBLAS plus
// OpenMP loops; the CUDA backend is cuBLAS plus the kernels in kernels/.
#pragma once
#include <cstddef>
#include <string>

namespace lt {

enum class Device { cpu, cuda };

const char* device_name(Device d);
// "cpu" or "cuda"; throws lt::Error for anything else.
Device parse_device(const std::string& name);

// CPU threads used by our loops and by OpenBLAS; 0 means all cores.
void set_num_threads(int n);
int num_threads();

// Empty when the CUDA backend can run here. Otherwise one line saying why:
// this build has no CUDA, or the runtime found no usable GPU (with its error).
std::string cuda_unavailable_reason();
inline bool cuda_available() { return cuda_unavailable_reason().empty(); }
// Throws lt::Error with cuda_unavailable_reason() when d is cuda and unusable.
void require_device(Device d);
// Lets cuBLAS run fp32 matrix products as TF32 on the tensor cores (about
// 3e-4 relative error, several times faster); off by default, as in PyTorch.
// A no-op on the CPU and in builds without CUDA.
void set_cuda_tf32(bool on);
bool cuda_tf32();
// Lets the CPU's linear layers round their matrix products' operands to bf16
// (fp32 sums; AVX512_BF16's vdpbf16ps, about twice the fp32 rate): training
// and the parallel pass, forward and backward. Off by default; turning it on
// throws lt::Error on a CPU without AVX512_BF16. The recurrent step has its
// own setting (ImageModel::set_step_precision).
void set_cpu_bf16_matmul(bool on);
bool cpu_bf16_matmul();
// set_cpu_bf16_matmul for one scope; the setting before it comes back after.
class ScopedCpuBf16Matmul {
 public:
  explicit ScopedCpuBf16Matmul(bool on) : before_(cpu_bf16_matmul()) { set_cpu_bf16_matmul(on); }
  ~ScopedCpuBf16Matmul() { set_cpu_bf16_matmul(before_); }
  ScopedCpuBf16Matmul(const ScopedCpuBf16Matmul&) = delete;
  ScopedCpuBf16Matmul& operator=(const ScopedCpuBf16Matmul&) = delete;

 private:
  bool before_;
};
// Waits for queued GPU work (no-op on CPU); benchmarks time around this.
void synchronize(Device d);
// Name of the CPU model or GPU, for benchmark rows.
std::string device_description(Device d);

// Bytes currently held and the high-water mark of Tensor storage per device
// (lt-bench reports peak memory from these). reset_peak sets peak = current.
size_t memory_in_use(Device d);
size_t memory_peak(Device d);
void memory_reset_peak(Device d);

// Build information: version, commit, whether CUDA was compiled in.
const char* build_commit();
const char* build_version();
bool built_with_cuda();

}  // namespace lt
