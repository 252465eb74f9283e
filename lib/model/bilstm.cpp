// BiLstm: forward and backward through time (BPTT) of the paper's Table 3
// baseline. Inside, everything is time-major [L, B, ..] so that one step of
// the whole batch is a contiguous [B, ..] block: the input projection of a
// layer is one GEMM over all L x B positions (the linear op), the recurrent
// product of a step one GEMM over the batch for the four fused gates, and the
// weight gradients two GEMMs over all positions after the step loop; the
// cell between them is an op (lstm_cell_forward/backward), so the same code
// runs on the CPU and on CUDA (cuBLAS products, a kernel per step).
// Each direction keeps h and c in L + 1 slots, the extra one the zero state
// before its first step (slot 0 forward, slot L backward): a step's previous
// state is then always slot t + d, and the previous states of all steps are
// one contiguous block for the dW_hh product.
// Padding: h, c and the gate gradients of a position past its row's length
// are zero, so the backward direction of a row starts at its last real frame
// from a zero state and padded outputs pass no gradient back.
#include "model/bilstm.h"

#include <cmath>
#include <random>

#include "common/random.h"
#include "core/grown_view.h"
#include "model/step_linear.h"
#include "ops/ops.h"

namespace lt {

void LstmConfig::validate() const {
  check(layers >= 1 && layers <= 64, "a bilstm needs 1..64 layers, not " + std::to_string(layers));
  check(hidden >= 1 && hidden <= (int64_t(1) << 14),
        "a bilstm's hidden size per direction must be 1..16384, not " + std::to_string(hidden));
  check(dropout >= 0.f && dropout < 1.f, "dropout must be in [0, 1), got " + std::to_string(dropout));
}

int64_t LstmConfig::parameter_count(int64_t input_width) const {
  const int64_t H = hidden, G = 4 * hidden;
  return 2 * (G * input_width + (layers - 1) * G * 2 * H + layers * (G * H + 2 * G));
}

// What a forward leaves for its backward. Views are time-major, in storage
// grown for the largest (B, L) the pass has held.
struct BiLstm::Pass final : EncoderPass {
  explicit Pass(const BiLstm& m) : lstm(&m) {}
  const BiLstm* lstm;  // that made it: another encoder refuses it
  int64_t B = 0, L = 0;
  Tensor lengths_store, lengths;  // one per row (int32, on the device)
  ForwardOptions options;         // of the forward, which backward repeats
  float dropout = 0.f;            // the rate its masks were drawn at
  // Storage, then the views of the forward.
  Tensor x_store;
  std::vector<Tensor> out_store, gates_store, h_store, c_store;
  Tensor x;                    // [L, B, in]: the input, transposed
  std::vector<Tensor> out;     // per layer [L, B, 2H]: both directions' h (after dropout, but the last)
  std::vector<Tensor> gates;   // per direction [L, B, 4H]: the activated gates i f g o
  std::vector<Tensor> h, c;    // per direction [L + 1, B, H]
};

// The scratch of one forward or backward call, grown for the largest shape.
struct BiLstm::Buffers {
  Tensor dx_store, dgates_store, dnext_store, dthis_store, dtmp_store, dh_store, dc_store, rec_store, w_hh_t_store;
  // The recurrent products, one per step, with weights packed once per pass
  // (OpenBLAS would pack them again at every step: a tenth of a training
  // step): W_hh in forward, W_hh^T in backward (every layer's have the same
  // shape, so one packing's storage serves them all).
  StepLinear forward_step, backward_step;
};

namespace {
// The dropout mask of layer l's output in a pass with this seed.
uint64_t layer_seed(uint64_t seed, size_t l) { return splitmix64(seed + 0xBB67AE8584CAA73Bull * (l + 1)); }
}  // namespace

BiLstm::BiLstm(const LstmConfig& config, int64_t input_width, Parameters& params, const std::string& prefix,
               Device device)
    : config_(config),
      input_width_(input_width),
      device_(device),
      params_(params),
      buf_(std::make_unique<Buffers>()) {
  config_.validate();
  check(input_width >= 1, "a bilstm needs inputs of at least one feature");
  const int64_t H = config_.hidden, G = 4 * H;
  // nn.LSTM's state_dict order: per layer the forward direction's four tensors, then the _reverse ones.
  for (int64_t l = 0; l < config_.layers; ++l)
    for (const char* suffix : {"", "_reverse"}) {
      const std::string k = "_l" + std::to_string(l) + suffix;
      DirectionTensors d;
      d.w_ih = params.add(prefix + "weight_ih" + k, {G, l == 0 ? input_width : 2 * H});
      d.w_hh = params.add(prefix + "weight_hh" + k, {G, H});
      d.b_ih = params.add(prefix + "bias_ih" + k, {G});
      d.b_hh = params.add(prefix + "bias_hh" + k, {G});
      dirs_.push_back(d);
    }
}

BiLstm::~BiLstm() = default;

void BiLstm::set_dropout(float p) {
  check(p >= 0.f && p < 1.f, "dropout must be in [0, 1), got " + std::to_string(p));
  config_.dropout = p;
}

void BiLstm::release_buffers() { buf_ = std::make_unique<Buffers>(); }

void BiLstm::init_parameters(uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(-1.0 / std::sqrt(double(config_.hidden)),
                                                 1.0 / std::sqrt(double(config_.hidden)));
  for (const DirectionTensors& d : dirs_)
    for (size_t i : {d.w_ih, d.w_hh, d.b_ih, d.b_hh}) {
      Tensor t = params_.value(i);
      std::vector<float> v(t.numel());
      for (float& x : v) x = float(uniform(gen));
      t.copy_from(Tensor::from_vector(v, t.shape()));
    }
}

std::unique_ptr<EncoderPass> BiLstm::new_pass() const { return std::make_unique<Pass>(*this); }

BiLstm::Pass& BiLstm::own(EncoderPass& pass) const {
  auto* p = dynamic_cast<Pass*>(&pass);
  check(p != nullptr && p->lstm == this, "a bilstm was given a pass another encoder made");
  return *p;
}

void BiLstm::plan(Pass& b, int64_t B, int64_t L) const {
  const int64_t H = config_.hidden, G = 4 * H, n = config_.layers;
  const Device dev = device_;
  b.B = B, b.L = L;
  b.out_store.resize(n), b.gates_store.resize(2 * n), b.h_store.resize(2 * n), b.c_store.resize(2 * n);
  b.out.resize(n), b.gates.resize(2 * n), b.h.resize(2 * n), b.c.resize(2 * n);
  b.x = grown_view(b.x_store, {L, B, input_width_}, dev);
  for (int64_t l = 0; l < n; ++l) b.out[l] = grown_view(b.out_store[l], {L, B, 2 * H}, dev);
  for (int64_t k = 0; k < 2 * n; ++k) {
    b.gates[k] = grown_view(b.gates_store[k], {L, B, G}, dev);
    b.h[k] = grown_view(b.h_store[k], {L + 1, B, H}, dev);
    b.c[k] = grown_view(b.c_store[k], {L + 1, B, H}, dev);
  }
}

// One direction d of layer l over in [L, B, in]: its h into columns d*H.. of out[l].
void BiLstm::direction_forward(Pass& b, size_t l, int d, const Tensor& in) {
  const int64_t B = b.B, L = b.L, H = config_.hidden, G = 4 * H;
  const DirectionTensors& p = dirs_[2 * l + d];
  const size_t k = 2 * l + d;
  Tensor gates2 = b.gates[k].reshape({L * B, G});
  linear_forward(in.reshape({L * B, in.dim(2)}), params_.value(p.w_ih), params_.value(p.b_ih), gates2,
                 b.options.precision.products);
  StepLinear& recurrent = buf_->forward_step;
  recurrent.prepare(params_.value(p.w_hh), Products::fp32, StepLinear::packing_pays(device_, Products::fp32));
  const Tensor b_hh = params_.value(p.b_hh);
  const Tensor h_slots = b.h[k].reshape({(L + 1) * B, H}), c_slots = b.c[k].reshape({(L + 1) * B, H});
  Tensor out2 = b.out[l].reshape({L * B, 2 * H});
  Tensor rec = grown_view(buf_->rec_store, {B, G}, device_);
  const int64_t zero_slot = d == 0 ? 0 : L;
  h_slots.rows(zero_slot * B, zero_slot * B + B).zero();
  c_slots.rows(zero_slot * B, zero_slot * B + B).zero();
  for (int64_t s = 0; s < L; ++s) {
    const int64_t t = d == 0 ? s : L - 1 - s;
    const int64_t prev = t + d, next = t + 1 - d;  // slots of the state before and after the step
    recurrent.forward(h_slots.rows(prev * B, prev * B + B), b_hh, rec);  // h_{t-1} W_hh^T + b_hh
    Tensor gt = gates2.rows(t * B, t * B + B), ct = c_slots.rows(next * B, next * B + B),
           ht = h_slots.rows(next * B, next * B + B), ot = out2.rows(t * B, t * B + B);
    lstm_cell_forward(gt, rec, c_slots.rows(prev * B, prev * B + B), b.lengths, t, ct, ht, ot, d * H);
  }
}

void BiLstm::forward(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options,
                     EncoderPass& pass) {
  check(common_device({&x, &y}, "bilstm") == device_, "bilstm input and output must live on the model's device");
  check(x.ndim() == 3 && x.dim(2) == input_width_,
        "bilstm input must be [B, L, " + std::to_string(input_width_) + "], got " + shape_str(x.shape()));
  const int64_t B = x.dim(0), L = x.dim(1), H = config_.hidden;
  check_shape(y, {B, L, 2 * H}, "bilstm output");
  Pass& b = own(pass);
  plan(b, B, L);
  check(!lengths.defined() || (lengths.dtype() == DType::i32 && lengths.numel() == B),
        "bilstm lengths need one int32 per row");
  b.lengths = grown_view(b.lengths_store, {B}, device_, DType::i32);
  b.lengths.copy_from(lengths.defined() ? lengths : Tensor::from_vector(std::vector<int32_t>(B, int32_t(L)), {B}));
  b.options = options;
  b.dropout = config_.dropout;
  swap_leading_axes(x, b.x);
  const size_t n = dirs_.size() / 2;
  for (size_t l = 0; l < n; ++l) {
    const Tensor& in = l == 0 ? b.x : b.out[l - 1];
    direction_forward(b, l, 0, in);
    direction_forward(b, l, 1, in);
    // nn.LSTM's dropout: on the outputs of every layer but the last.
    if (options.train && config_.dropout > 0 && l + 1 < n)
      dropout_forward(b.out[l], config_.dropout, layer_seed(options.seed, l), b.out[l], {options.first_row, B, L});
  }
  swap_leading_axes(b.out[n - 1], y);
}

// BPTT of one direction d of layer l: dout [L, B, 2H] (the gradient of
// out[l]) -> din [L, B, in] (written, or added to); weight gradients accumulate.
void BiLstm::direction_backward(const Pass& b, size_t l, int d, const Tensor& in, const Tensor& dout, Tensor& din,
                                bool accumulate_din) {
  Buffers& s = *buf_;
  const int64_t B = b.B, L = b.L, H = config_.hidden, G = 4 * H;
  const DirectionTensors& p = dirs_[2 * l + d];
  const size_t k = 2 * l + d;
  Tensor dgates = grown_view(s.dgates_store, {L, B, G}, device_);
  Tensor dh = grown_view(s.dh_store, {B, H}, device_), dc = grown_view(s.dc_store, {B, H}, device_);
  dh.zero(), dc.zero();
  // dh_{t-1} = dgates W_hh: products with W_hh^T [H, G] as the weights.
  const Tensor w_hh = params_.value(p.w_hh);
  Tensor w_hh_t = grown_view(s.w_hh_t_store, {H, G, 1}, device_);
  swap_leading_axes(w_hh.reshape({G, H, 1}), w_hh_t);
  StepLinear& recurrent = s.backward_step;
  recurrent.prepare(w_hh_t.reshape({H, G}), Products::fp32, StepLinear::packing_pays(device_, Products::fp32));
  const Tensor dgates2 = dgates.reshape({L * B, G}), dout2 = dout.reshape({L * B, 2 * H});
  const Tensor gates2 = b.gates[k].reshape({L * B, G}), c_slots = b.c[k].reshape({(L + 1) * B, H});
  for (int64_t s = 0; s < L; ++s) {
    const int64_t t = d == 0 ? L - 1 - s : s;  // the forward pass's steps in reverse
    const int64_t prev = t + d, next = t + 1 - d;
    Tensor dgt = dgates2.rows(t * B, t * B + B);
    lstm_cell_backward(gates2.rows(t * B, t * B + B), c_slots.rows(next * B, next * B + B),
                       c_slots.rows(prev * B, prev * B + B), dh, dout2.rows(t * B, t * B + B), d * H, b.lengths, t,
                       dc, dgt);
    recurrent.forward(dgt, Tensor(), dh);
  }
  // The previous states of all steps are slots d .. d+L-1: dW_hh += dgates^T h_prev, db_hh += sum dgates.
  Tensor none, dw_hh = params_.grad(p.w_hh), db_hh = params_.grad(p.b_hh);
  Tensor h_prev = b.h[k].reshape({(L + 1) * B, H}).rows(d * B, (d + L) * B);
  linear_backward(h_prev, w_hh, dgates2, none, dw_hh, db_hh);
  Tensor dw_ih = params_.grad(p.w_ih), db_ih = params_.grad(p.b_ih);
  const int64_t width = in.dim(2);
  Tensor in2 = in.reshape({L * B, width});
  Tensor dx = accumulate_din ? grown_view(s.dtmp_store, {L * B, width}, device_) : din.reshape({L * B, width});
  linear_backward(in2, params_.value(p.w_ih), dgates2, dx, dw_ih, db_ih, b.options.precision.products);
  if (accumulate_din) {
    Tensor din2 = din.reshape({L * B, width});
    accumulate(din2, dx);
  }
}

void BiLstm::backward(const EncoderPass& pass, const Tensor& dy, Tensor& dx) {
  const Pass& b = own(const_cast<EncoderPass&>(pass));
  Buffers& s = *buf_;
  check(b.B > 0, "bilstm backward of a pass no forward filled");
  const int64_t B = b.B, L = b.L, H = config_.hidden;
  check_shape(dy, {B, L, 2 * H}, "bilstm output gradient");
  check_shape(dx, {B, L, input_width_}, "bilstm input gradient");
  const size_t n = dirs_.size() / 2;
  Tensor dthis = grown_view(s.dthis_store, {L, B, 2 * H}, device_);
  swap_leading_axes(dy, dthis);
  for (size_t l = n; l-- > 0;) {
    const Tensor& in = l == 0 ? b.x : b.out[l - 1];
    Tensor din = l == 0 ? grown_view(s.dx_store, {L, B, input_width_}, device_)
                        : grown_view(s.dnext_store, {L, B, 2 * H}, device_);
    direction_backward(b, l, 0, in, dthis, din, false);
    direction_backward(b, l, 1, in, dthis, din, true);
    if (l == 0) {
      swap_leading_axes(din, dx);
    } else {
      if (b.options.train && b.dropout > 0)
        dropout_backward(din, b.dropout, layer_seed(b.options.seed, l - 1), din, {b.options.first_row, B, L});
      std::swap(s.dthis_store, s.dnext_store);
      dthis = din;
    }
  }
}

}  // namespace lt
