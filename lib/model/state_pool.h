// Many independent sequences in one recurrent state: a pool of rows that
// streams take when they start and give back when they end, stepped together
// in place. Each row is at its own position (a speech stream's restarts at
// every pause, an image request's where it joined), and one call steps any
// subset of rows with their own inputs: the weights are read once for all
// of them, which is what makes a thousand live streams one batched product
// instead of a thousand matrix-vector products.
//
// A row's results are the same bits as the sequence stepped alone: its
// products are PackedLinear's, whose every output row is computed alike at
// any batch, and its attention and convolution read and write that row only.
// Rows are never copied in or out to step: a speech state is ~230 kB, and
// copying hundreds of them at every 30 ms position would move more memory
// than the step itself. Growing the pool (doubling) copies each live row once.
//
//   lt::StatePool pool(model, lt::DType::f32);
//   int64_t a = pool.acquire(), b = pool.acquire();
//   pool.step({a, b}, inputs, heads);   // inputs [2] tokens or [2, F] frames
//   pool.release(a);
#pragma once
#include <cstdint>
#include <exception>
#include <vector>

#include "model/sequence_model.h"

namespace lt {

class StatePool {
 public:
  // A pool over a causal linear transformer (its state has a fixed size), S
  // in dtype; prepares the model's step at precision with packed weights.
  // The model must outlive the pool, and nothing else may step it meanwhile
  // with other step settings.
  StatePool(SequenceModel& model, const Precision& precision, int64_t capacity = 8);
  // A free row at position 0 (zeros); the pool doubles when none is free.
  int64_t acquire();
  void release(int64_t row);
  // Back to the empty prefix: zeros, position 0.
  void reset(int64_t row);
  int64_t position(int64_t row) const { return positions_[size_t(row)]; }
  int64_t capacity() const { return state_.batch; }
  int64_t live() const { return live_; }
  // Bytes of one row's state.
  int64_t row_bytes() const;
  SequenceModel& model() const { return model_; }

  // Steps rows[0..n-1] (live), each at its position: inputs [n] tokens or
  // [n, F] frames -> heads [n, head width]. A row may take several positions
  // in one step: its entries then follow one another (a run), its next
  // positions in order, and the step reads and writes its state once for
  // all of them (a stream with 90 ms of audio waiting steps three positions
  // for the state traffic of one). Each row's position moves on by its
  // entries. Allocation-free after the largest n. Inputs and heads may be on
  // the CPU for a model on the GPU: the pool copies them across.
  void step(const std::vector<int64_t>& rows, const Tensor& inputs, Tensor& heads);
  // Continues one row over a chunk, inputs [1, T] or [1, T, F] -> heads [1, T,
  // head width], in one parallel pass (SequenceModel::continue_chunk). The
  // row is continued alone, as a sequence of its own would be, so that its
  // bits do not depend on what else joins; a chunk's products are large
  // enough already.
  void continue_chunk(int64_t row, const Tensor& inputs, Tensor& heads);

 private:
  void check_live(int64_t row, const char* what) const;
  void grow();
  // A GPU's step: rows padded to the next power of two with -1 (no state),
  // so that a handful of batch sizes, each replaying its recorded graph,
  // serve every step; inputs and heads copied across.
  void step_bucket(const std::vector<int64_t>& rows, const int64_t* positions, const Tensor& inputs, Tensor& heads);
  // A GPU's step with runs: its kernels step distinct rows, so round j steps
  // the j-th entry of every run longer than j.
  void step_rounds(const std::vector<int64_t>& rows, const Tensor& inputs, Tensor& heads);
  // t itself on the model's device, else a view of storage there (t copied in when copy).
  Tensor on_model_device(const Tensor& t, Tensor& storage, bool copy = true);

  SequenceModel& model_;
  Precision precision_;
  RecurrentState state_;  // batch = capacity; its own position is unused
  RecurrentState one_;    // continue_chunk's row, continued alone
  std::vector<int64_t> positions_;
  std::vector<char> used_;
  std::vector<int64_t> free_;  // free rows, the lowest last
  std::vector<int64_t> step_positions_;  // one step's, grown
  std::vector<uint64_t> stepped_at_;     // per row: the last step that had it, to find a row in two runs
  uint64_t steps_ = 0;
  std::vector<int64_t> round_rows_, round_entries_, round_positions_;  // step_rounds', grown
  Tensor round_inputs_, round_heads_;
  std::vector<std::exception_ptr> slice_errors_;
  Tensor inputs_, heads_;  // a GPU model's copies of a step's CPU inputs and heads, grown
  std::vector<int64_t> bucket_rows_, bucket_positions_;  // a GPU step's rows and positions, padded
  // Rows below which a step is not cut into slices for the threads (a tile
  // of PackedLinear is 8 rows), and the slices a step is cut into per
  // thread, taken as threads come free.
  static constexpr int64_t kSliceRows = 8;
  static constexpr int64_t kSlicesPerThread = 4;
  int64_t live_ = 0;
  int64_t reserved_rows_ = 0;  // the model's step buffers made for this many rows (CPU)
  int reserved_slots_ = 0;     // in this many slots
};

}  // namespace lt
