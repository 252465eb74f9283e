// The benchmarks of lt-bench, one function each, writing rows to a Writer.
#pragma once
#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "model/image_model.h"
#include "report.h"

namespace lt::bench {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct AttentionBenchOptions {
  std::vector<std::string> kinds{"all"};
  std::vector<std::string> devices{"cpu"};
  int64_t min_length = 512, max_length = 65536;
  int64_t tokens = 65536;  // batch = tokens / N, at least 1
  int64_t heads = 8, head_dim = 32;
  int repetitions = 3;
  double max_memory_gb = 16;
  bool tf32 = false;  // cuda: the causal kinds' chunks on the tensor cores
  bool verbose = true;
};
void run_attention_bench(const AttentionBenchOptions& o, Writer& out);

// Standard-normal values of the given shape on d.
Tensor random_tensor(const Shape& s, Device d, std::mt19937& gen);

// An image model's attention name for TransformerConfig::set_attention from
// its benchmark name: linear (= causal-linear), softmax or lsh-N.
std::string image_attention(const std::string& name);

// The paper's MNIST ("mnist") or CIFAR-10 ("cifar") image model, with
// layers, width (head dim = width / heads) and heads overridden where > 0.
ImageModelConfig bench_model_config(const std::string& shape, const std::string& attention, int64_t layers,
                                    int64_t d_model, int64_t heads);

struct GenerateBenchOptions {
  std::vector<std::string> shapes{"mnist"};  // mnist (8 layers, 784 steps) or cifar (16 layers, 3072 steps)
  std::vector<std::string> attentions{"linear", "softmax"};  // and lsh-N: recomputation
  std::vector<std::string> devices{"cpu"};
  std::vector<int64_t> batches{1, 16, 64, 256};
  int64_t steps = 0;  // positions timed per image (0: all of them)
  int64_t layers = 0, d_model = 0, heads = 0;  // 0: the shape's own
  int repetitions = 1;
  double max_memory_gb = 16;
  bool bf16 = false;      // the state in bf16, and on the cpu the step's matrix products too
  bool tf32 = false;      // cuda: the step's products in TF32
  bool openblas = false;  // cpu: the step's products through OpenBLAS, not packed weights
  bool cuda_graphs = true;  // cuda: each recurrent step's stack replayed as one CUDA graph
  bool verbose = true;
};
void run_generate_bench(const GenerateBenchOptions& o, Writer& out);

struct TrainBenchOptions {
  std::vector<std::string> shapes{"mnist"};
  std::vector<std::string> devices{"cpu"};
  std::string attention = "causal-linear";
  int64_t batch = 0;   // 0: the paper's (16 for mnist, 10 for cifar)
  int64_t layers = 0, d_model = 0, heads = 0;  // 0: the shape's own
  int repetitions = 3;
  bool bf16 = false;  // cpu: the linear layers' products in bf16
  bool tf32 = false;  // cuda: the linear layers' products in TF32
  std::string gpu_sum = "nccl";  // under mpirun with cuda: nccl or host (lt-train's --gpu-sum)
  bool verbose = true;
};
void run_train_bench(const TrainBenchOptions& o, Writer& out);

struct SpeechBenchOptions {
  std::vector<std::string> attentions{"linear", "softmax", "causal-linear", "bilstm"};  // bilstm: the LSTM baseline
  std::vector<std::string> devices{"cpu"};
  std::vector<int> stacks{1, 3};  // 10 ms frames per encoder position
  int64_t frames = 800;           // the paper's mean utterance (2,400 at most)
  int64_t batch = 16;
  int64_t layers = 9, d_model = 192, heads = 6;  // the paper's encoder
  int64_t lstm_layers = 3, lstm_hidden = 320;    // the paper's Bi-LSTM (Table 3)
  double hours = 80;              // an epoch of this much audio (WSJ si284: 80 h)
  int repetitions = 3;
  bool bf16 = false, tf32 = false;
  bool verbose = true;
};
void run_speech_bench(const SpeechBenchOptions& o, Writer& out);

struct AsrBenchOptions {
  std::vector<std::string> modes{"offline", "stream"};
  std::vector<std::string> devices{"cpu"};
  std::vector<int> thread_counts{1, 2};
  std::string model;                             // empty: a random model of the shape below
  int64_t layers = 9, d_model = 192, heads = 6;  // the paper's encoder
  int stack = 3;                                 // 10 ms frames per encoder position
  int context = 8;                               // context frames each side (a causal model: before only)
  int64_t ff_conv = 0;                           // the models' feed-forward convolution taps (0: none)
  double seconds = 30;                           // offline: one recording this long
  double stream_seconds = 60;                    // stream: this much audio
  double chunk_ms = 100;                         // stream: audio arrives in pieces this long
  int beam = 1;
  int repetitions = 3;
  bool bf16 = false;
  bool verbose = true;
  bool has_mode(const std::string& m) const { return std::find(modes.begin(), modes.end(), m) != modes.end(); }
};
void run_asr_bench(const AsrBenchOptions& o, Writer& out);

struct StreamsBenchOptions {
  std::vector<std::string> modes{"batched", "alone"};
  int64_t streams = 64;        // N, or where --find starts
  bool find = false;           // the largest N in real time
  int64_t max_streams = 4096;  // --find stops here
  std::string model, phone_lm;  // empty: the shipped ones; phone_lm "none": no phone model
  std::vector<std::string> audio;  // recordings to replay (empty: sentences spoken by espeak-ng)
  double seconds = 10;    // each stream's audio
  double arrival = 4;     // streams start at random within this many seconds
  double chunk_ms = 20;   // audio arrives in pieces this long (a microphone's or RTP's 20 ms frames)
  double interval_ms = 10;  // the compute loop steps at most this often
  double max_delay = 0.5; // the decoders' (lt-asr's default)
  int beam = 64;          // lt-asr's default
  double prune = -10;     // lt-asr's --prune default
  double lag_bound_ms = 0;  // 0: max_delay + 100 ms
  double lag_bound() const { return lag_bound_ms > 0 ? lag_bound_ms : 1e3 * max_delay + 100; }
  int64_t images = 0;       // > 0: N image requests instead of speech
  std::string image_model;  // empty: the shipped mnist model
  std::string device = "cpu";  // of the group (or image batch); processes run lt-asr on the CPU
  bool bf16 = false, tf32 = false;
  bool verbose = true;
  const char* precision() const { return bf16 ? "bf16" : tf32 ? "tf32" : "fp32"; }
};
void run_streams_bench(const StreamsBenchOptions& o, Writer& out);

}  // namespace lt::bench
