// The copy task: its sequences and its model's configuration.
#include "train/copy_task.h"

#include "common/random.h"
#include "io/safetensors.h"

namespace lt {

void CopyTaskConfig::validate() const {
  check(sequence_length >= 8, "copy task sequence length must be >= 8, got " + std::to_string(sequence_length));
  check(symbols >= 1, "copy task needs at least one symbol");
  check(transformer.direction == Direction::causal, "the copy task predicts the next token: a causal model");
  sequence_config().validate();
}

SequenceModelConfig CopyTaskConfig::sequence_config() const {
  SequenceModelConfig c;
  c.family = "copy";
  c.vocabulary = symbols + 1;
  c.max_positions = sequence_length;
  c.transformer = transformer;
  c.head.kind = HeadKind::categorical;
  c.head.classes = symbols + 1;
  return c;
}

CopyTaskConfig copy_task_of(const SequenceModelConfig& m) {
  CopyTaskConfig c;
  c.sequence_length = m.max_positions;
  c.symbols = m.vocabulary - 1;
  c.transformer = m.transformer;
  return c;
}

void make_copy_batch(const CopyTaskConfig& c, uint64_t seed, int64_t step, int64_t rows, SequenceBatch& b) {
  const int64_t L = c.sequence_length, lo = L / 4, hi = (L - 1) / 2;
  b.rows = rows;
  b.length = L;
  b.inputs.assign(rows * L, 0);
  b.targets.assign(rows * L, 0);
  b.first.resize(rows);
  b.last.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t n = lo + int64_t(sample_uniform(seed, step, r, 0) * double(hi - lo));
    int32_t* x = &b.inputs[r * L];
    for (int64_t i = 0; i < n; ++i) {
      int32_t s = 1 + int32_t(sample_uniform(seed, step, r, int(1 + i)) * double(c.symbols));
      x[i] = x[n + 1 + i] = s;
    }
    for (int64_t i = 0; i + 1 < L; ++i) b.targets[r * L + i] = x[i + 1];
    b.first[r] = n - 1;
    b.last[r] = 2 * n;
  }
}

std::unique_ptr<SequenceModel> load_copy_model(const std::string& path, Device device) {
  return load_copy_model(load_safetensors(path), device);
}

std::unique_ptr<SequenceModel> load_copy_model(const Checkpoint& ck, Device device) {
  const std::string& path = ck.path;
  check(ck.meta("lt.model", "") == "copy",
        path + ": not a copy-task checkpoint (metadata lt.model is '" + ck.meta("lt.model", "") + "')");
  // Older copy checkpoints name their length sequence_length.
  const int64_t L = ck.metadata.count("max_positions") ? 0 : ck.meta_int("sequence_length");
  auto model = SequenceModel::load(ck, device, L);
  check(model->config().head.kind == HeadKind::categorical &&
            model->config().head.classes == model->config().vocabulary,
        path + ": a copy model predicts its own " + std::to_string(model->config().vocabulary) + " tokens");
  try {
    copy_task_of(model->config()).validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return model;
}

Evaluation CopyTrainingTask::evaluate(ReplicaSet& replicas, const ForwardOptions& options) {
  constexpr uint64_t kTestSeedOffset = 0x7E57;  // test batches never equal training ones
  SequenceBatch b;
  Evaluation e;
  e.accuracy = 0;
  for (int64_t i = 0; i < kTestBatches; ++i) {
    make_copy_batch(config_, seed_ + kTestSeedOffset, i, kTestRows, b);
    const BatchScore s = replicas.forward(b, options, true);
    e.loss += s.loss / kTestBatches;
    e.accuracy += s.accuracy / kTestBatches;
  }
  e.examples = kTestBatches * kTestRows;
  return e;
}

}  // namespace lt
