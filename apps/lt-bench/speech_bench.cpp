// lt-bench speech: training time of the paper's speech encoder (section 4.3:
// 9 layers, 6 heads of 32, CTC over 39 phones and the blank) on random
// 40-bin filterbank frames, per attention, and of its Bi-LSTM baseline (3
// layers of 320 per direction), for the paper's Table 3: seconds per step,
// frames/s, and the seconds an epoch of --hours of audio takes.
#include <chrono>
#include <iostream>
#include <random>

#include "benchmarks.h"
#include "common/error.h"
#include "core/precision_flags.h"
#include "speech/speech_corpus.h"
#include "speech/speech_model.h"
#include "train/trainer.h"
#include "train/training_loop.h"

namespace lt::bench {
namespace {

// A batch of rows x frames/stack positions, with 1 phone per 8 frames (read
// speech runs about 12 phones a second: 1 per 8 frames of 10 ms).
SequenceBatch speech_batch(int64_t rows, int64_t frames, int stack, std::mt19937& gen) {
  SequenceBatch b;
  b.rows = rows;
  b.length = (frames + stack - 1) / stack;
  std::normal_distribution<float> normal(0, 1);
  b.features.resize(size_t(rows * b.length * 40 * stack));
  for (float& v : b.features) v = normal(gen);
  b.labels.offsets = {0};
  for (int64_t r = 0; r < rows; ++r) {
    int32_t last = 0;
    for (int64_t k = 0; k < frames / 8; ++k) {
      int32_t p;
      do p = int32_t(1 + gen() % (kPhoneClasses - 1));
      while (p == last);
      b.labels.labels.push_back(last = p);
    }
    b.labels.offsets.push_back(int64_t(b.labels.labels.size()));
  }
  return b;
}

// The encoder a row names: an attention of the paper's transformer, or bilstm.
SequenceModelConfig bench_model(const SpeechBenchOptions& o, const std::string& name, int stack, int64_t positions) {
  if (name == "bilstm") {
    LstmConfig l;
    l.layers = o.lstm_layers;
    l.hidden = o.lstm_hidden;
    return speech_model_config(l, 40 * stack, kPhoneClasses, positions);
  }
  TransformerConfig t{o.layers, o.heads, o.d_model / o.heads, o.d_model, 4 * o.d_model,
                      AttentionKind::linear, Direction::bidirectional, "elu", 0.1f};
  const bool causal = name.rfind("causal-", 0) == 0;
  t.set_attention(causal ? name.substr(7) : name);
  t.direction = causal ? Direction::causal : Direction::bidirectional;
  return speech_model_config(t, 40 * stack, kPhoneClasses, positions);
}

}  // namespace

void run_speech_bench(const SpeechBenchOptions& o, Writer& out) {
  for (const std::string& dname : o.devices) {
    const Device dev = parse_device(dname);
    require_device(dev);
    ForwardOptions options;
    options.train = true;
    options.precision = training_precision(o.bf16, o.tf32, dev);
    for (const std::string& name : o.attentions) {
      for (int stack : o.stacks) {
        const int64_t positions = (o.frames + stack - 1) / stack;
        SequenceModel model(bench_model(o, name, stack, positions), dev);
        const SequenceModelConfig& c = model.config();
        model.init_parameters(5);
        TrainOptions topt;
        topt.schedule.lr = 1e-4f;
        Trainer trainer(model.params(), topt);
        std::mt19937 gen(9);
        const SequenceBatch batch = speech_batch(o.batch, o.frames, stack, gen);
        ReplicaSet replicas(model, o.batch);  // as lt-train: the batch split over CPU threads
        std::vector<double> step_s;
        for (int r = 0; r < o.repetitions + 1; ++r) {  // the first step plans buffers
          synchronize(dev);
          const auto t0 = Clock::now();
          options.seed = trainer.dropout_seed();
          replicas.forward_backward(batch, options);
          trainer.update();
          synchronize(dev);
          const double secs = seconds_since(t0);
          if (r > 0) step_s.push_back(secs);
          if (o.verbose) std::cerr << "speech " << name << " x" << stack << " step " << r << ": " << secs << " s\n";
        }
        const Stats s = Stats::of(step_s);
        const double frames_per_s = double(o.batch * o.frames) / s.mean;
        Row row = environment_row(dname, num_threads());
        row.set("attention", c.encoder_name()).set("frame_stack", int64_t(stack));
        const bool lstm = c.encoder == EncoderKind::bilstm;  // d_model: the encoder's output width, 2H
        row.set("layers", lstm ? c.lstm.layers : c.transformer.layers).set("d_model", c.width());
        row.set("batch", o.batch).set("frames", o.frames);
        row.set("positions", positions).set("precision", products_name(options.precision.products));
        row.set("ms_per_step", s.mean * 1e3).set("ms_per_step_std", s.stddev * 1e3);
        row.set("audio_s_per_s", frames_per_s / 100.0);
        row.set("epoch_s", o.hours * 3600.0 * 100.0 / frames_per_s).set("epoch_hours_of_audio", o.hours);
        row.set("repetitions", o.repetitions);
        out.add(row);
      }
    }
  }
}

}  // namespace lt::bench
