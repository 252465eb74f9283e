// The benchmarks of lt-bench, one function each, writing rows to a Writer.
#pragma once
#include <string>
#include <vector>

#include "report.h"

namespace lt::bench {

struct AttentionBenchOptions {
  std::vector<std::string> kinds{"all"};
  std::vector<std::string> devices{"cpu"};
  int64_t min_length = 512, max_length = 65536;
  int64_t tokens = 65536;  // batch = tokens / N, at least 1
  int64_t heads = 8, head_dim = 32;
  int repetitions = 3;
  double max_memory_gb = 16;
  bool verbose = true;
};
void run_attention_bench(const AttentionBenchOptions& o, Writer& out);

}  // namespace lt::bench
