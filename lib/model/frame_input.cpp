// FrameInput: feature frames passed to the encoder as they are. The paper's
// Bi-LSTM baseline (Table 3) reads the filterbank frames with its first
// layer's input weights and needs no position code: its recurrence knows
// the order.
#include "model/input_part.h"

namespace lt {
namespace {

class FrameInput final : public InputPart {
 public:
  explicit FrameInput(int64_t features) : features_(features) {}

  void forward(const Tensor& frames, int64_t /*offset*/, Tensor& x) override {
    check(frames.dtype() == DType::f32 && frames.dim(-1) == features_ && frames.numel() == x.numel(),
          "frame input must be float [B, T, " + std::to_string(features_) + "] as the encoder's " +
              shape_str(x.shape()) + ", got " + shape_str(frames.shape()));
    x.copy_from(frames);
  }
  void forward_at(const Tensor& /*frames*/, const int64_t* /*positions*/, Tensor& /*x*/, int /*slot*/) override {
    throw Error("frames as they are feed a Bi-LSTM, which has no recurrent form");
  }
  void reserve_at(int /*slots*/, int64_t /*rows*/) override {}  // nothing to step
  void backward(const Tensor& /*frames*/, const Tensor& /*dx*/) override {}  // no tensors to train
  void init_parameters(std::mt19937_64& /*gen*/) const override {}
  int64_t width() const override { return features_; }

 private:
  int64_t features_;
};

}  // namespace

std::unique_ptr<InputPart> make_frame_input(int64_t features) { return std::make_unique<FrameInput>(features); }

}  // namespace lt
