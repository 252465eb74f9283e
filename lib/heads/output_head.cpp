// OutputHead: the head a model was built with, dispatched to its functions.
// A per-position head scores the positions it is given, compacted when they
// are not every one; CTC scores whole rows over their real frames.
#include "heads/heads.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "core/grown_view.h"

namespace lt {
namespace {
// A row's frames for CTC: up to its last scored position.
std::vector<int32_t> frames_of(const HeadTargets& t, int64_t rows, int64_t length) {
  if (t.last.empty()) return std::vector<int32_t>(rows, int32_t(length));
  return std::vector<int32_t>(t.last.begin(), t.last.end());
}

// Where the nll goes: the caller's tensor when it lives on the head's device
// (nothing to copy), else the buffers'.
Tensor nll_output(Tensor* nll, LossBuffers& b, int64_t n, Device device) {
  if (nll && nll->device() == device && nll->dtype() == DType::f32 && nll->numel() == n) return nll->reshape({n});
  return grown_view(b.nll, {n}, device);
}

// sample and sample_rows: a CTC head has no position of its own to draw.
void check_draws(const OutputHead& h) {
  check(h.per_position(), "the ctc head scores whole sequences: it draws no position on its own (heads/ctc.h decodes)");
}
}  // namespace

int64_t OutputHead::counted(const HeadTargets& t, int64_t rows, int64_t length) const {
  const bool spans = !t.first.empty() || !t.last.empty();
  if (spans) {
    if (int64_t(t.first.size()) != rows || int64_t(t.last.size()) != rows)
      throw Error("batch counts need a range per row");
    for (int64_t r = 0; r < rows; ++r)
      if (t.first[r] < 0 || t.first[r] > t.last[r] || t.last[r] > length)
        throw Error("row " + std::to_string(r) + " scores positions " + std::to_string(t.first[r]) + ".." +
                    std::to_string(t.last[r] - 1) + ", outside 0.." + std::to_string(length - 1));
  }
  if (kind == HeadKind::ctc) {
    const CtcTargets& l = t.labels;
    if (l.rows() != rows || l.offsets[0] != 0 || l.offsets[rows] != int64_t(l.labels.size()))
      throw Error("a CTC batch needs one label sequence per row");
    for (int64_t r = 0; spans && r < rows; ++r)
      if (t.first[r] != 0) throw Error("the ctc head scores each row from its first position");
    return int64_t(l.labels.size());
  }
  const Tensor& p = t.positions;
  if (!p.defined() || p.dtype() != DType::i32 || p.numel() != rows * length)
    throw Error("batch targets: " + (p.defined() ? std::to_string(p.numel()) : std::string("none")) + " for " +
                std::to_string(rows) + " x " + std::to_string(length) + " positions of a " + name() + " head");
  if (!spans) return rows * length;
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) n += t.last[r] - t.first[r];
  return n;
}

double OutputHead::loss_forward(const Tensor& head, const HeadTargets& t, LossBuffers& b, Tensor* nll,
                                double* accuracy) const {
  if (head.ndim() != 3 || head.dim(2) != width())
    throw Error(std::string("the ") + name() + " head's outputs must be [rows, length, " + std::to_string(width()) +
                "], got " + shape_str(head.shape()));
  const int64_t R = head.dim(0), L = head.dim(1), P = width(), n = counted(t, R, L);
  const Device dev = head.device();
  Tensor out = nll_output(nll, b, kind == HeadKind::ctc ? R : n, dev);
  double loss = 0;
  if (kind == HeadKind::ctc) {
    loss = ctc_loss_forward(head, frames_of(t, R, L), t.labels, out) / double(n);
    if (accuracy) *accuracy = -1;
  } else {
    if (t.first.empty()) {
      b.scored = head.reshape({n, P});
      b.scored_targets = t.positions.device() == dev ? t.positions.reshape({n}) : grown_view(b.targets, {n}, dev, DType::i32);
      if (b.scored_targets.raw() != t.positions.raw()) b.scored_targets.copy_from(t.positions);
    } else {
      // The targets compacted on the host (one copy to the device), the head's rows on its device.
      const std::vector<int32_t> all = t.positions.to_vector_i32();
      std::vector<int32_t> picked;
      picked.reserve(size_t(n));
      b.scored = grown_view(b.picked, {n, P}, dev);
      const Tensor rows = head.reshape({R * L, P});
      for (int64_t r = 0, o = 0; r < R; o += t.last[r] - t.first[r], ++r) {
        picked.insert(picked.end(), all.begin() + r * L + t.first[r], all.begin() + r * L + t.last[r]);
        b.scored.rows(o, o + t.last[r] - t.first[r]).copy_from(rows.rows(r * L + t.first[r], r * L + t.last[r]));
      }
      b.scored_targets = grown_view(b.targets, {n}, dev, DType::i32);
      b.scored_targets.copy_from(Tensor::from_vector(picked, {n}));
    }
    loss = kind == HeadKind::categorical ? categorical_loss_forward(b.scored, b.scored_targets, out)
                                         : mol_loss_forward(b.scored, b.scored_targets, out);
    if (accuracy) {
      const std::vector<float> logits = b.scored.to_vector();
      const std::vector<int32_t> want = b.scored_targets.to_vector_i32();
      int64_t right = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float* row = &logits[i * P];
        right += int64_t(std::max_element(row, row + P) - row) == want[i];
      }
      *accuracy = double(right) / double(n);
    }
  }
  if (nll && out.raw() != nll->raw()) nll->copy_from(out);
  return loss;
}

void OutputHead::loss_backward(const Tensor& head, const HeadTargets& t, float scale, LossBuffers& b,
                               Tensor& dhead) const {
  check_shape(dhead, head.shape(), "loss_backward dhead");
  const int64_t R = head.dim(0), L = head.dim(1), P = width();
  if (kind == HeadKind::ctc) {
    ctc_loss_backward(head, frames_of(t, R, L), t.labels, std::vector<float>(R, scale), dhead);
    return;
  }
  auto backward = [&](const Tensor& scored, const Tensor& targets, Tensor& dscored) {
    if (kind == HeadKind::categorical)
      categorical_loss_backward(scored, targets, scale, dscored);
    else
      mol_loss_backward(scored, targets, scale, dscored);
  };
  if (t.first.empty()) {
    Tensor d2 = dhead.reshape({R * L, P});
    backward(b.scored, b.scored_targets, d2);
    return;
  }
  const int64_t n = b.scored.dim(0);
  Tensor dpicked = grown_view(b.dpicked, {n, P}, head.device());
  backward(b.scored, b.scored_targets, dpicked);
  Tensor drows = dhead.reshape({R * L, P});
  dhead.zero();
  for (int64_t r = 0, o = 0; r < R; o += t.last[r] - t.first[r], ++r)
    drows.rows(r * L + t.first[r], r * L + t.last[r]).copy_from(dpicked.rows(o, o + t.last[r] - t.first[r]));
}

void OutputHead::sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& out) const {
  check_draws(*this);
  if (kind == HeadKind::categorical)
    categorical_sample(head, seed, step, out);
  else
    mol_sample(head, seed, step, out);
}

void OutputHead::sample_rows(const Tensor& head, const uint64_t* seeds, const int64_t* steps, Tensor& out) const {
  check_draws(*this);
  if (kind == HeadKind::categorical)
    categorical_sample_rows(head, seeds, steps, out);
  else
    mol_sample_rows(head, seeds, steps, out);
}

}  // namespace lt
