// The bidirectional LSTM encoder of the paper's speech baseline (Table 3:
// "Bi-LSTM", 3 layers of 320 hidden units per direction over the same
// filterbank features and CTC head as the transformers), with explicit
// forward and backward (BPTT) passes on the CPU and CUDA. Gates are PyTorch's nn.LSTM:
//   [i f g o] = x W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh   (4H fused gates)
//   i, f, o = sigmoid, g = tanh;  c_t = f c_{t-1} + i g;  h_t = o tanh(c_t)
// run forward in time and, with their own weights, backward in time; the two
// directions' h are concatenated (2H) into the next layer and the output.
// Tensor names are nn.LSTM(bidirectional=True)'s state_dict keys under
// prefix: {prefix}weight_ih_l{k} [4H, in], weight_hh_l{k} [4H, H],
// bias_ih_l{k}, bias_hh_l{k} [4H], and the same with _reverse.
// A bidirectional model reads its whole input before its first output: it
// has no recurrent (streaming) form.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/encoder.h"
#include "model/parameters.h"

namespace lt {

struct LstmConfig {
  int64_t layers = 3;    // stacked bidirectional layers (the paper's 3)
  int64_t hidden = 320;  // H per direction (the paper's 320): outputs are 2H wide
  float dropout = 0.1f;  // on every layer's output but the last, as nn.LSTM's dropout
  // Throws lt::Error naming the size out of range.
  void validate() const;
  // Values of its tensors over inputs of this width.
  int64_t parameter_count(int64_t input_width) const;
};

class BiLstm final : public Encoder {
 public:
  // Declares the layers' tensors in params under prefix ("lstm."), which
  // must not be allocated yet; the model's tensors live on device.
  BiLstm(const LstmConfig& config, int64_t input_width, Parameters& params, const std::string& prefix = "lstm.",
         Device device = Device::cpu);
  ~BiLstm() override;
  const LstmConfig& config() const { return config_; }
  void set_dropout(float p) override;
  void release_buffers() override;
  // nn.LSTM's default: every tensor U(-1/sqrt(H), 1/sqrt(H)).
  void init_parameters(uint64_t seed) override;
  // x [B, L, input width] -> y [B, L, 2H]. Row b's forward direction reads
  // positions 0..lengths[b]-1, its backward direction starts at lengths[b]-1
  // from a zero state. Products: precision.products for the input projection
  // of all positions at once and the weight gradients; the recurrent product
  // of each step is fp32. lengths may live on any device.
  // The pass keeps the input, every direction's gates, h and c, and each
  // layer's output, time-major.
  std::unique_ptr<EncoderPass> new_pass() const override;
  void forward(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options,
               EncoderPass& pass) override;
  void backward(const EncoderPass& pass, const Tensor& dy, Tensor& dx) override;

 private:
  struct DirectionTensors {
    size_t w_ih, w_hh, b_ih, b_hh;  // indices in params
  };
  struct Pass;     // what a forward leaves for its backward
  struct Buffers;  // scratch of one call
  Pass& own(EncoderPass& pass) const;  // refuses another encoder's pass
  void plan(Pass& pass, int64_t B, int64_t L) const;
  void direction_forward(Pass& pass, size_t l, int d, const Tensor& in);
  void direction_backward(const Pass& pass, size_t l, int d, const Tensor& in, const Tensor& dout, Tensor& din,
                          bool accumulate_din);

  LstmConfig config_;
  int64_t input_width_;
  Device device_;
  Parameters& params_;
  std::vector<DirectionTensors> dirs_;  // layer l's forward direction at 2l, its backward one at 2l + 1
  std::unique_ptr<Buffers> buf_;
};

}  // namespace lt
