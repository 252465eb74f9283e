// TokenInput: value embedding beside the sinusoidal position code, d/2 each.
#include <random>
#include <vector>

#include "core/grown_view.h"
#include "model/input_part.h"
#include "ops/ops.h"

namespace lt {
namespace {

class TokenInput final : public InputPart {
 public:
  TokenInput(Parameters& params, int64_t vocabulary, int64_t d_model, int64_t max_positions)
      : params_(params), d_(d_model), max_positions_(max_positions) {
    table_ = params.add("value_embedding.weight", {vocabulary, d_model / 2});
  }

  void forward(const Tensor& tokens, int64_t offset, Tensor& x) override {
    const int64_t B = tokens.dim(0), T = tokens.ndim() == 1 ? 1 : tokens.dim(1);
    check(offset >= 0 && offset + T <= max_positions_,
          "positions " + std::to_string(offset) + ".." + std::to_string(offset + T - 1) + " outside the model's 0.." +
              std::to_string(max_positions_ - 1));
    prepare_step(false);
    Tensor emb = grown_view(emb_, {B, T, d_ / 2}, params_.device());
    Shape ids_by_channel = tokens.shape();
    ids_by_channel.push_back(d_ / 2);
    Tensor rows = emb.reshape(ids_by_channel);
    embedding_forward(tokens, params_.value(table_), rows);
    Tensor x3 = x.reshape({B, T, d_});
    concat_position_forward(emb, pe_.rows(offset, offset + T), x3);
  }

  void reserve_at(int slots, int64_t rows) override {
    for (int s = 0; s < slots; ++s) {
      grown_view(emb_at_[size_t(s)], {rows, d_ / 2}, params_.device());
      grown_view(pe_rows_[size_t(s)], {rows, d_ / 2}, params_.device());
    }
  }

  void forward_at(const Tensor& tokens, const int64_t* positions, Tensor& x, int slot) override {
    const int64_t B = tokens.dim(0);
    for (int64_t b = 0; b < B; ++b)
      if (positions[b] < 0 || positions[b] >= max_positions_)
        throw Error("position " + std::to_string(positions[b]) + " outside the model's 0.." +
                    std::to_string(max_positions_ - 1));
    if (!pe_.defined()) {
      if (slot != 0) throw Error("prepare_step before steps on several threads");
      prepare_step(false);
    }
    Tensor emb = grown_view(emb_at_[size_t(slot)], {B, d_ / 2}, params_.device());
    embedding_forward(tokens, params_.value(table_), emb);
    const Device dev = params_.device();
    Tensor pe = grown_view(pe_rows_[size_t(slot)], {B, d_ / 2}, dev);
    if (dev == Device::cpu) {
      for (int64_t b = 0; b < B; ++b) pe.rows(b, b + 1).copy_from(pe_.rows(positions[b], positions[b] + 1));
    } else {  // a copy a row is a launch each on a GPU: the rows are gathered on the host and copied in one piece
      if (!pe_host_.defined()) pe_host_ = pe_.to(Device::cpu);
      Tensor rows = grown_view(pe_rows_host_, {B, d_ / 2}, Device::cpu);
      for (int64_t b = 0; b < B; ++b) rows.rows(b, b + 1).copy_from(pe_host_.rows(positions[b], positions[b] + 1));
      pe.copy_from(rows);
    }
    // The B rows as one sequence of B positions, each beside its own code.
    Tensor x3 = x.reshape({1, B, d_});
    concat_position_forward(emb.reshape({1, B, d_ / 2}), pe, x3);
  }

  void prepare_step(bool /*pack*/) override {
    if (pe_.defined()) return;  // on the parameters' device, which is known once they are allocated
    pe_ = Tensor::empty({max_positions_, d_ / 2}, params_.device());
    position_code(0, pe_);
  }

  void backward(const Tensor& tokens, const Tensor& dx) override {
    const int64_t B = dx.dim(0), T = dx.dim(1);
    Tensor demb = grown_view(demb_, {B, T, d_ / 2}, params_.device());
    concat_position_backward(dx, demb);
    Tensor dtable = params_.grad(table_);
    embedding_backward(tokens, demb, dtable);
  }

  int64_t width() const override { return d_; }

  void init_parameters(std::mt19937_64& gen) const override {
    Tensor t = params_.value(table_);
    std::vector<float> v(t.numel());
    std::normal_distribution<double> normal(0, 1);  // torch.nn.Embedding's default
    for (auto& x : v) x = float(normal(gen));
    t.copy_from(Tensor::from_vector(v, t.shape()));
  }

 private:
  Parameters& params_;
  int64_t d_, max_positions_;
  size_t table_;
  Tensor pe_, emb_, demb_;
  std::vector<Tensor> emb_at_ = std::vector<Tensor>(kStepSlots), pe_rows_ = std::vector<Tensor>(kStepSlots);  // forward_at's, per slot
  Tensor pe_host_, pe_rows_host_;  // on a GPU (one thread steps it): the code table's host copy, forward_at's rows
};

}  // namespace

std::unique_ptr<InputPart> make_token_input(Parameters& params, int64_t vocabulary, int64_t d_model,
                                            int64_t max_positions) {
  return std::make_unique<TokenInput>(params, vocabulary, d_model, max_positions);
}

}  // namespace lt
