// StatePool (model/state_pool.h): rows of one RecurrentState, a free list and
// each row's position.
#include "model/state_pool.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <string>

#include "backend/device.h"
#include "common/error.h"
#include "core/grown_view.h"

namespace lt {

StatePool::StatePool(SequenceModel& model, const Precision& precision, int64_t capacity)
    : model_(model), precision_(precision) {
  const SequenceModelConfig& c = model.config();
  check(c.runs_as_rnn(), "a state pool needs a causal linear transformer (a state of fixed size); this model is " +
                             c.encoder_name() + (c.transformer.direction == Direction::causal ? "" : ", bidirectional"));
  check(capacity >= 1, "a state pool needs a capacity >= 1");
  model.prepare_step(precision, /*pack_weights=*/true);
  state_ = model.new_state(capacity, precision.state);
  positions_.assign(size_t(capacity), 0);
  used_.assign(size_t(capacity), 0);
  stepped_at_.assign(size_t(capacity), 0);
  for (int64_t r = capacity - 1; r >= 0; --r) free_.push_back(r);
}

int64_t StatePool::row_bytes() const { return state_.buffer.numel() * int64_t(sizeof(float)) / state_.batch; }

void StatePool::grow() {
  const int64_t old = state_.batch, cap = 2 * old;
  // Not zeroed: acquire() resets a row before anything steps it. Zeroing it
  // all here stalled the step that grew the pool (110 ms from 256 speech
  // rows to 512); left alone, its pages are touched row by row as streams
  // arrive.
  RecurrentState bigger = model_.new_state(cap, precision_.state, /*zeroed=*/false);
  for (int64_t r = 0; r < old; ++r)
    if (used_[size_t(r)]) model_.copy_state_element(state_, r, bigger, r);
  state_ = std::move(bigger);
  positions_.resize(size_t(cap), 0);
  used_.resize(size_t(cap), 0);
  stepped_at_.resize(size_t(cap), 0);
  for (int64_t r = cap - 1; r >= old; --r) free_.push_back(r);
}

int64_t StatePool::acquire() {
  if (free_.empty()) grow();
  const int64_t row = free_.back();
  free_.pop_back();
  used_[size_t(row)] = 1;
  ++live_;
  reset(row);
  return row;
}

void StatePool::check_live(int64_t row, const char* what) const {
  if (row < 0 || row >= state_.batch || !used_[size_t(row)])
    throw Error(std::string("state pool: ") + what + " of row " + std::to_string(row) + ", which is not in use");
}

void StatePool::release(int64_t row) {
  check_live(row, "release");
  used_[size_t(row)] = 0;
  --live_;
  free_.push_back(row);
  // The lowest free row is taken first, so live rows stay packed at the front.
  std::sort(free_.begin(), free_.end(), std::greater<int64_t>());
}

void StatePool::reset(int64_t row) {
  check_live(row, "reset");
  model_.reset_state_element(state_, row);
  positions_[size_t(row)] = 0;
}

void StatePool::step(const std::vector<int64_t>& rows, const Tensor& inputs, Tensor& heads) {
  if (rows.empty()) return;
  if (inputs.ndim() < 1 || inputs.dim(0) != int64_t(rows.size()))
    throw Error("state pool step: " + std::to_string(rows.size()) + " rows but inputs " + shape_str(inputs.shape()));
  // A run's first entry steps at its row's position, the next ones after it.
  const int64_t n = int64_t(rows.size());
  step_positions_.resize(rows.size());
  ++steps_;
  bool runs = false;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[size_t(i)];
    check_live(r, "a step");
    const bool again = i > 0 && r == rows[size_t(i - 1)];
    if (!again && stepped_at_[size_t(r)] == steps_)
      throw Error("state pool step: row " + std::to_string(r) + "'s entries do not follow one another");
    stepped_at_[size_t(r)] = steps_;
    step_positions_[size_t(i)] = again ? step_positions_[size_t(i - 1)] + 1 : positions_[size_t(r)];
    runs |= again;
  }
  // On the CPU, slices of the rows on the threads, each through the whole
  // stack on its own: one parallel region a step instead of one per op (about
  // 85 for the speech model), whose barriers cost more than the work at these
  // sizes, all the more when other threads (a server's I/O) share the cores.
  // A few slices a thread, each taken by the next thread free: a thread held
  // up by another on its core then delays the step by a slice at most, where
  // with one slice each the other thread waited for its whole half. Every op
  // inside runs on its thread alone, a run in order, so a slice never cuts
  // one; a row's bits are the same either way. A GPU takes the whole step
  // from one thread, on its one stream.
  const int threads = int(std::min<int64_t>({int64_t(num_threads()), n / kSliceRows, int64_t(kStepSlots)}));
  const int64_t slices = std::min<int64_t>(n / kSliceRows, threads * kSlicesPerThread);
  auto cut = [&](int64_t s) {  // slice s's first entry: at a run's start
    int64_t at = n * s / slices;
    while (at > 0 && at < n && rows[size_t(at)] == rows[size_t(at - 1)]) ++at;
    return at;
  };
  // Every slot's buffers for the largest slice before the threads start:
  // which thread takes which slice varies from step to step.
  const int slots = std::max(threads, 1);
  int64_t largest = slots == 1 ? n : 0;
  for (int64_t s = 0; s < slices && slots > 1; ++s) largest = std::max(largest, cut(s + 1) - cut(s));
  if (model_.device() == Device::cpu && (largest > reserved_rows_ || slots > reserved_slots_)) {
    reserved_rows_ = std::max(reserved_rows_, largest);
    reserved_slots_ = std::max(reserved_slots_, slots);
    model_.reserve_step_rows(reserved_slots_, reserved_rows_);
  }
  if (model_.device() != Device::cpu) {
    if (runs)
      step_rounds(rows, inputs, heads);
    else
      step_bucket(rows, step_positions_.data(), inputs, heads);
  } else if (threads <= 1) {
    model_.step_rows(state_, rows.data(), step_positions_.data(), inputs, heads);
  } else {
    std::vector<std::exception_ptr>& failed = slice_errors_;
    failed.assign(size_t(slices), nullptr);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t s = 0; s < slices; ++s) {
      const int64_t begin = cut(s), end = cut(s + 1);
      try {
        if (end > begin) {
          Tensor in = inputs.rows(begin, end), out = heads.rows(begin, end);
          model_.step_rows(state_, rows.data() + begin, step_positions_.data() + begin, in, out,
                           omp_get_thread_num());
        }
      } catch (...) {
        failed[size_t(s)] = std::current_exception();
      }
    }
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
  }
  for (int64_t r : rows) ++positions_[size_t(r)];
}

void StatePool::step_bucket(const std::vector<int64_t>& rows, const int64_t* positions, const Tensor& inputs,
                            Tensor& heads) {
  const int64_t n = int64_t(rows.size());
  int64_t bucket = 1;
  while (bucket < n) bucket *= 2;
  bucket_rows_.assign(rows.begin(), rows.end());
  bucket_rows_.resize(size_t(bucket), -1);  // no state: a padding element
  bucket_positions_.assign(positions, positions + n);
  bucket_positions_.resize(size_t(bucket), 0);
  Shape shape = inputs.shape();
  shape[0] = bucket;
  Tensor in = grown_view(inputs_, shape, model_.device(), inputs.dtype());
  in.rows(0, n).copy_from(inputs);
  if (bucket > n) in.rows(n, bucket).zero();  // token 0 or silence: any valid input
  Tensor out = grown_view(heads_, {bucket, heads.dim(1)}, model_.device());
  model_.step_rows(state_, bucket_rows_.data(), bucket_positions_.data(), in, out);
  heads.copy_from(out.rows(0, n));
}

void StatePool::step_rounds(const std::vector<int64_t>& rows, const Tensor& inputs, Tensor& heads) {
  const int64_t n = int64_t(rows.size());
  for (int64_t j = 0;; ++j) {
    round_rows_.clear();
    round_entries_.clear();
    round_positions_.clear();
    for (int64_t start = 0, end = 0; start < n; start = end) {
      for (end = start + 1; end < n && rows[size_t(end)] == rows[size_t(start)];) ++end;
      if (end - start <= j) continue;
      round_rows_.push_back(rows[size_t(start)]);
      round_entries_.push_back(start + j);
      round_positions_.push_back(step_positions_[size_t(start + j)]);
    }
    const int64_t m = int64_t(round_rows_.size());
    if (m == 0) return;
    Shape shape = inputs.shape();
    shape[0] = m;
    Tensor in = grown_view(round_inputs_, shape, inputs.device(), inputs.dtype());
    Tensor out = grown_view(round_heads_, {m, heads.dim(1)}, heads.device());
    for (int64_t i = 0; i < m; ++i) {
      const int64_t e = round_entries_[size_t(i)];
      in.rows(i, i + 1).copy_from(inputs.rows(e, e + 1));
    }
    step_bucket(round_rows_, round_positions_.data(), in, out);
    for (int64_t i = 0; i < m; ++i) {
      const int64_t e = round_entries_[size_t(i)];
      heads.rows(e, e + 1).copy_from(out.rows(i, i + 1));
    }
  }
}

Tensor StatePool::on_model_device(const Tensor& t, Tensor& storage, bool copy) {
  if (t.device() == model_.device()) return t;
  Tensor there = grown_view(storage, t.shape(), model_.device(), t.dtype());
  if (copy) there.copy_from(t);
  return there;
}

void StatePool::continue_chunk(int64_t row, const Tensor& inputs, Tensor& heads) {
  check_live(row, "a chunk");
  if (one_.batch == 0) one_ = model_.new_state(1, precision_.state);
  model_.copy_state_element(state_, row, one_, 0);
  one_.position = positions_[size_t(row)];
  Tensor in = on_model_device(inputs, inputs_), out = on_model_device(heads, heads_, /*copy=*/false);
  model_.continue_chunk(one_, in, out);
  if (out.raw() != heads.raw()) heads.copy_from(out);
  model_.copy_state_element(one_, 0, state_, row);
  positions_[size_t(row)] = one_.position;
}

}  // namespace lt
