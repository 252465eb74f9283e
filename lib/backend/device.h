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
// What this CPU's vector units offer: AVX-512 (F, BW, VL), which the packed
// products of generation need, and AVX512_BF16 (vdpbf16ps) for bf16 products.
bool cpu_has_avx512();
bool cpu_has_bf16();
// AMX tiles with bf16 products (TDPBF16PS, Sapphire Rapids on), which the
// kernel has let this process use (Linux 5.16+ hands the tile state out on
// request, and a hypervisor may withhold it).
bool cpu_has_amx();
// Whether the GPU replays a recurrent step's launches as one CUDA graph (on
// by default; off to compare).
void set_cuda_graphs(bool on);
bool cuda_graphs();
// Waits for queued GPU work (no-op on CPU); benchmarks time around this.
void synchronize(Device d);
// Name of the CPU model or GPU, for benchmark rows.
std::string device_description(Device d);

// Bytes currently held and the high-water mark of Tensor storage per device
// (lt-bench reports peak memory from these). reset_peak sets peak = current.
size_t memory_in_use(Device d);
size_t memory_peak(Device d);
void memory_reset_peak(Device d);
// The most bytes of tensors a device may hold (0: no limit, the default); an
// allocation past it throws lt::OutOfMemory, as running out does.
void set_memory_limit(Device d, size_t bytes);

// Build information: version, commit, whether CUDA was compiled in.
const char* build_commit();
const char* build_version();
bool built_with_cuda();

}  // namespace lt
