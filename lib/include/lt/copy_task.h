// The copy task of the paper (section 4.1.1, Figure 2), as the reference's
// causal-copy experiment: a row holds n random symbols 1..S, a separator 0,
// the same n symbols again and zero padding to L (n uniform in [L/4, (L-1)/2)).
// The model predicts the next token everywhere; loss and accuracy count the
// positions n-1 .. 2n-1 (the separator and the copy).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lt/parameters.h"
#include "lt/tensor.h"
#include "lt/transformer.h"

namespace lt {

struct CopyTaskConfig {
  int64_t sequence_length = 128;
  int64_t symbols = 10;  // vocabulary: symbols + 1 with the separator / padding 0
  TransformerConfig transformer{4, 8, 32, 256, 1024};
  void validate() const;
};

struct CopyBatch {
  std::vector<int32_t> x, y;    // [B, L] inputs and next-token targets
  std::vector<int64_t> first, last;  // per row: counted positions first .. last-1
  int64_t rows = 0;
};

// Row r of batch `step` is a function of (seed, step, r) only.
void make_copy_batch(const CopyTaskConfig& config, uint64_t seed, int64_t step, int64_t rows, CopyBatch& batch);

class CopyModel {
 public:
  CopyModel(const CopyTaskConfig& config, Device device);
  ~CopyModel();
  static std::unique_ptr<CopyModel> load(const std::string& path, Device device);
  void save(const std::string& path, const std::map<std::string, std::string>& extra = {},
            const std::map<std::string, Tensor>& extra_tensors = {}) const;
  std::map<std::string, std::string> metadata() const;
  void init_parameters(uint64_t seed);

  const CopyTaskConfig& config() const { return config_; }
  void set_dropout(float p);  // for later training steps, and saved with the model
  Parameters& params() { return params_; }
  Device device() const { return device_; }

  // Mean cross-entropy (nats) over the counted positions; accuracy, if given,
  // receives the fraction of them whose argmax is the target.
  double forward(const CopyBatch& batch, bool train, uint64_t seed, double* accuracy = nullptr);
  void backward();  // gradients of the last forward's loss into params().grads()

 private:
  struct Buffers;
  CopyTaskConfig config_;
  Device device_;
  Parameters params_;
  std::unique_ptr<TransformerStack> stack_;
  size_t embedding_, predictor_w_, predictor_b_;
  Tensor pe_;
  std::unique_ptr<Buffers> buf_;
};

}  // namespace lt
