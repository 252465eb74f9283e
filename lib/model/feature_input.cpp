// FeatureInput: frames of features (speech's normalised, stacked filterbanks)
// through a linear projection to d/2, beside the sinusoidal position code.
// The code is computed for the positions asked for rather than read from a
// fixed table, so a stream (the causal model run as an RNN) has no length
// limit; a step keeps the codes of the first positions once made.
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/grown_view.h"
#include "model/input_part.h"
#include "ops/ops.h"

namespace lt {
namespace {

// The codes of positions 0 .. kRows - 1, each made the first time a step
// asks for it. A pool's step makes a code per row, 48 exponentials, sines
// and cosines in double apiece (1% of a 448-stream speech step), and a
// speech stream's positions restart at every pause, so the same few hundred
// come back. Steps run on several threads: one claims a row and fills it,
// the others make their own copy meanwhile. position_code makes every one,
// so a code has the same bits either way.
class PositionCodes {
 public:
  static constexpr int64_t kRows = 4096;
  explicit PositionCodes(int64_t width)
      : width_(width), table_(new float[size_t(kRows * width)]), state_(new std::atomic<uint8_t>[size_t(kRows)]) {
    for (int64_t i = 0; i < kRows; ++i) state_[size_t(i)].store(kEmpty, std::memory_order_relaxed);
  }

  // position's code into out [width].
  void write(int64_t position, float* out) {
    if (position < kRows) {
      std::atomic<uint8_t>& state = state_[size_t(position)];
      float* row = table_.get() + position * width_;
      uint8_t seen = state.load(std::memory_order_acquire);
      if (seen == kEmpty && state.compare_exchange_strong(seen, kMaking, std::memory_order_acq_rel)) {
        make(position, row);
        state.store(kReady, std::memory_order_release);
        seen = kReady;
      }
      if (seen == kReady) {
        std::memcpy(out, row, size_t(width_) * sizeof(float));
        return;
      }
    }
    make(position, out);
  }

 private:
  enum : uint8_t { kEmpty, kMaking, kReady };
  void make(int64_t position, float* out) const {
    Tensor code = Tensor::wrap(out, {1, width_}, Device::cpu);
    position_code(position, code);
  }
  int64_t width_;
  std::unique_ptr<float[]> table_;  // not zeroed: only the rows made are touched
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
};

class FeatureInput final : public InputPart {
 public:
  FeatureInput(Parameters& params, int64_t features, int64_t d_model)
      : params_(params), features_(features), d_(d_model) {
    w_ = params.add("input_projection.weight", {d_model / 2, features});
    b_ = params.add("input_projection.bias", {d_model / 2});
  }

  void forward(const Tensor& frames, int64_t offset, Tensor& x) override {
    check(frames.dtype() == DType::f32 && frames.dim(-1) == features_ && (frames.ndim() == 2 || frames.ndim() == 3),
          "feature input must be float [B, T, " + std::to_string(features_) + "] or [B, " +
              std::to_string(features_) + "], got " + shape_str(frames.shape()));
    check(offset >= 0, "feature positions start at 0, not " + std::to_string(offset));
    const int64_t B = frames.dim(0), T = frames.ndim() == 2 ? 1 : frames.dim(1);
    const Device dev = params_.device();
    Tensor pe = grown_view(pe_, {T, d_ / 2}, dev);
    position_code(offset, pe);
    Tensor proj = grown_view(proj_, {B, T, d_ / 2}, dev);
    linear_forward(frames.reshape({B, T, features_}), params_.value(w_), params_.value(b_), proj);
    Tensor x3 = x.reshape({B, T, d_});
    concat_position_forward(proj, pe, x3);
  }

  void reserve_at(int slots, int64_t rows) override {
    const Device dev = params_.device();
    for (int s = 0; s < slots; ++s) {
      grown_view(pe_at_[size_t(s)], {rows, d_ / 2}, dev);
      grown_view(proj_at_[size_t(s)], {rows, d_ / 2}, dev);
      if (dev != Device::cpu) grown_view(pe_host_[size_t(s)], {rows, d_ / 2}, Device::cpu);
    }
  }

  void forward_at(const Tensor& frames, const int64_t* positions, Tensor& x, int slot) override {
    if (frames.dtype() != DType::f32 || frames.ndim() != 2 || frames.dim(1) != features_)
      throw Error("feature input must be float [B, " + std::to_string(features_) + "], got " +
                  shape_str(frames.shape()));
    const int64_t B = frames.dim(0);
    const Device dev = params_.device();
    Tensor pe = grown_view(pe_at_[size_t(slot)], {B, d_ / 2}, dev);
    // A row's code is a launch of its own on a GPU: there they are made on the host and copied in one piece.
    Tensor codes = dev == Device::cpu ? pe : grown_view(pe_host_[size_t(slot)], {B, d_ / 2}, Device::cpu);
    for (int64_t b = 0; b < B; ++b) {
      if (positions[b] < 0) throw Error("feature positions start at 0, not " + std::to_string(positions[b]));
      codes_.write(positions[b], codes.data() + b * (d_ / 2));
    }
    if (dev != Device::cpu) pe.copy_from(codes);
    Tensor proj = grown_view(proj_at_[size_t(slot)], {B, d_ / 2}, dev);
    if (!step_.W.defined() && step_.packed.out() == 0) {
      if (slot != 0) throw Error("prepare_step before steps on several threads");
      prepare_step(false);
    }
    step_.forward(frames, params_.value(b_), proj);
    Tensor x3 = x.reshape({1, B, d_});
    concat_position_forward(proj.reshape({1, B, d_ / 2}), pe, x3);
  }

  // fp32 as forward's: PackedLinear when it pays, whose rows come out alike at any batch.
  void prepare_step(bool pack) override {
    step_.prepare(params_.value(w_), Products::fp32, pack && StepLinear::packing_pays(params_.device(), Products::fp32));
  }

  void backward(const Tensor& frames, const Tensor& dx) override {
    const int64_t B = dx.dim(0), T = dx.dim(1);
    const Device dev = params_.device();
    Tensor dproj = grown_view(dproj_, {B, T, d_ / 2}, dev);
    concat_position_backward(dx, dproj);
    Tensor none, dW = params_.grad(w_), db = params_.grad(b_);
    linear_backward(frames.reshape({B, T, features_}), params_.value(w_), dproj, none, dW, db);
  }

  int64_t width() const override { return d_; }

  void init_parameters(std::mt19937_64& gen) const override {
    // torch.nn.Linear's default: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
    const double bound = 1.0 / std::sqrt(double(features_));
    std::uniform_real_distribution<double> uniform(-bound, bound);
    for (size_t i : {w_, b_}) {
      Tensor t = params_.value(i);
      std::vector<float> v(t.numel());
      for (auto& x : v) x = float(uniform(gen));
      t.copy_from(Tensor::from_vector(v, t.shape()));
    }
  }

 private:
  Parameters& params_;
  int64_t features_, d_;
  size_t w_, b_;
  Tensor pe_, proj_, dproj_;
  StepLinear step_;  // input_projection for forward_at
  std::vector<Tensor> pe_at_ = std::vector<Tensor>(kStepSlots), proj_at_ = std::vector<Tensor>(kStepSlots);  // forward_at's, per slot
  std::vector<Tensor> pe_host_ = std::vector<Tensor>(kStepSlots);  // forward_at's codes made on the host for a GPU
  PositionCodes codes_{d_ / 2};  // forward_at's, as made
};

}  // namespace

std::unique_ptr<InputPart> make_feature_input(Parameters& params, int64_t features, int64_t d_model) {
  return std::make_unique<FeatureInput>(params, features, d_model);
}

}  // namespace lt
