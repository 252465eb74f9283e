// The speech task: featurising utterances once into memory, length-bucketed
// batches, and scoring by phone error rate.
#include "train/speech_training.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <set>

#include "audio/audio_file.h"
#include "common/error.h"
#include "common/random.h"
#include "train/world.h"

namespace lt {

std::vector<std::vector<float>> compute_filterbanks(const std::vector<Utterance>& utterances,
                                                    const SpeechFrontEnd& frontend) {
  std::vector<std::vector<float>> raw(utterances.size());
  std::string failure;
  // Utterances are independent: one per thread at a time, the first error kept.
#pragma omp parallel for schedule(dynamic, 4)
  for (size_t i = 0; i < utterances.size(); ++i) {
    try {
      raw[i] = frontend.filterbank(read_audio(utterances[i].audio));
    } catch (const std::exception& e) {
#pragma omp critical
      if (failure.empty()) failure = e.what();
    }
  }
  check(failure.empty(), failure);
  return raw;
}

FeatureStats filterbank_statistics(const std::vector<std::vector<float>>& raw, int bins) {
  FeatureStats stats(bins);
  for (const auto& frames : raw) stats.add(frames.data(), int64_t(frames.size()) / bins);
  return stats;
}

SpeechSet make_speech_set(const std::vector<Utterance>& utterances, const std::vector<std::vector<float>>& raw,
                          const SpeechFrontEnd& frontend, int64_t max_positions, SpeechSetReport* report) {
  check(raw.size() == utterances.size(), "make_speech_set: one set of frames per utterance");
  SpeechSetReport r;
  SpeechSet set;
  const int bins = frontend.fbank_config().bins;
  const FrameWindow stacks{frontend.stack()};  // context comes per batch
  set.width = int64_t(bins) * stacks.frames();
  set.window = frontend.window();
  set.start = {0};
  set.phones.offsets = {0};
  for (size_t i = 0; i < utterances.size(); ++i) {
    const Utterance& u = utterances[i];
    const int64_t positions = frontend.positions(int64_t(raw[i].size()) / bins);
    if (u.phones.empty()) {
      ++r.no_phones;
      continue;
    }
    if (positions < ctc_min_frames(u.phones.data(), int64_t(u.phones.size()))) {
      ++r.too_short;
      continue;
    }
    if (positions > max_positions) {
      ++r.too_long;
      continue;
    }
    const std::vector<float> inputs = frontend.encoder_inputs(raw[i], stacks);
    set.inputs.insert(set.inputs.end(), inputs.begin(), inputs.end());
    set.start.push_back(set.start.back() + positions);
    set.phones.labels.insert(set.phones.labels.end(), u.phones.begin(), u.phones.end());
    set.phones.offsets.push_back(int64_t(set.phones.labels.size()));
    set.speakers.push_back(u.speaker);
    set.audio.push_back(u.audio);
  }
  if (report) *report = r;
  return set;
}

namespace {

// Rows idx of set as a padded batch: its stacked frames into stacked [rows,
// length, set.width], zero past each row's length; lengths and labels into out.
void gather_batch(const SpeechSet& set, const std::vector<int64_t>& idx, std::vector<float>& stacked,
                  SequenceBatch& out, const std::vector<std::vector<float>>* fresh = nullptr) {
  const int64_t rows = int64_t(idx.size()), W = set.width;
  // Row r's frames: fresh[r] where the waveform was changed, else the set's.
  auto changed = [&](int64_t r) { return fresh && !(*fresh)[size_t(r)].empty(); };
  auto positions = [&](int64_t r) {
    return changed(r) ? int64_t((*fresh)[size_t(r)].size()) / W : set.positions(idx[size_t(r)]);
  };
  int64_t length = 0;
  for (int64_t r = 0; r < rows; ++r) length = std::max(length, positions(r));
  out.rows = rows;
  out.length = length;
  out.inputs.clear();
  out.targets.clear();
  out.first.clear();
  out.last.clear();
  stacked.assign(size_t(rows * length * W), 0.f);
  out.lengths.resize(size_t(rows));
  out.labels.labels.clear();
  out.labels.offsets.assign(1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = idx[size_t(r)], n = positions(r);
    if (changed(r))
      std::copy((*fresh)[size_t(r)].begin(), (*fresh)[size_t(r)].end(), stacked.begin() + r * length * W);
    else
      std::copy(set.inputs.begin() + set.start[i] * W, set.inputs.begin() + (set.start[i] + n) * W,
                stacked.begin() + r * length * W);
    out.lengths[size_t(r)] = int32_t(n);
    const auto* first = set.phones.labels.data() + set.phones.offsets[i];
    out.labels.labels.insert(out.labels.labels.end(), first, first + set.phones.length(i));
    out.labels.offsets.push_back(int64_t(out.labels.labels.size()));
  }
}

// The encoder's inputs of a gathered batch: each position's window of
// frames, the context read within its own row.
void window_batch(const SpeechSet& set, const std::vector<float>& stacked, SequenceBatch& out) {
  const int64_t W = set.width, F = set.input_width(), L = out.length;
  const int bins = int(W / set.window.stack);
  out.features.assign(size_t(out.rows * L * F), 0.f);
  for (int64_t r = 0; r < out.rows; ++r) {
    const int64_t n = out.lengths[size_t(r)], frames = n * set.window.stack;
    window_frames(stacked.data() + r * L * W, 0, frames, frames - 1, bins, set.window, 0, n,
                  out.features.data() + r * L * F);
  }
}

// Fisher-Yates with a counter-based generator (the same on every platform).
void shuffle(std::vector<int64_t>& v, uint64_t key) {
  for (int64_t i = int64_t(v.size()) - 1; i > 0; --i)
    std::swap(v[size_t(i)], v[size_t(splitmix64(key + uint64_t(i)) % uint64_t(i + 1))]);
}

}  // namespace

SpeechScore score_speech(SequenceModel& model, const SpeechSet& set, int64_t batch, const ForwardOptions& options,
                         const CtcBeamOptions& decoding) {
  check(batch >= 1, "score_speech: batch must be >= 1");
  SpeechScore score;
  std::vector<int64_t> order(static_cast<size_t>(set.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return set.positions(a) < set.positions(b); });
  SequenceBatch b;
  std::vector<float> stacked;
  double nats = 0;
  int64_t phones = 0;
  const int64_t C = model.config().head.width();
  ForwardPass pass;  // its count and head outputs, batch after batch
  // Under MPI the ranks take the batches in turn, then sum their counts.
  World& world = World::get();
  for (size_t at = 0, k = 0; at < order.size(); at += size_t(batch), ++k) {
    if (int64_t(k % size_t(world.size())) != world.rank()) continue;
    const std::vector<int64_t> idx(order.begin() + long(at), order.begin() + long(std::min(order.size(), at + size_t(batch))));
    gather_batch(set, idx, stacked, b);
    window_batch(set, stacked, b);
    const double loss = model.forward(b, options, pass);
    nats += loss * double(pass.counted());
    phones += pass.counted();
    const std::vector<float> logits = pass.heads().to_vector();
    for (size_t r = 0; r < idx.size(); ++r) {
      const float* row = logits.data() + r * size_t(b.length * C);
      const std::vector<int32_t> hyp = labels_of(ctc_decode(row, b.lengths[r], C, decoding));
      const int64_t i = idx[r];
      const std::vector<int32_t> ref(set.phones.labels.begin() + set.phones.offsets[i],
                                     set.phones.labels.begin() + set.phones.offsets[i + 1]);
      score.overall.add(ref, hyp);
      score.by_speaker[set.speakers[size_t(i)]].add(ref, hyp);
    }
  }
  std::set<std::string> speakers(set.speakers.begin(), set.speakers.end());
  std::vector<double> sums = {nats, double(phones)};
  auto pack = [&](const ErrorCounts& c) {
    for (int64_t v : {c.errors, c.reference, c.substitutions, c.deletions, c.insertions}) sums.push_back(double(v));
  };
  pack(score.overall);
  for (const std::string& s : speakers) pack(score.by_speaker[s]);
  world.sum(sums.data(), int64_t(sums.size()));
  size_t at = 2;
  auto unpack = [&](ErrorCounts& c) {
    for (int64_t* v : {&c.errors, &c.reference, &c.substitutions, &c.deletions, &c.insertions}) *v = int64_t(sums[at++]);
  };
  unpack(score.overall);
  for (const std::string& s : speakers) unpack(score.by_speaker[s]);
  score.loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
  score.utterances = set.size();
  return score;
}

SpeechTrainingTask::SpeechTrainingTask(SpeechSet train, SpeechSet valid, uint64_t seed, SpeechFrontEnd frontend,
                                       const SpeechAugmentation& augmentation)
    : train_(std::move(train)),
      valid_(std::move(valid)),
      seed_(seed),
      frontend_(std::move(frontend)),
      augment_(augmentation) {
  check(train_.input_width() == frontend_.features() && train_.window == frontend_.window(),
        "speech task: rows of " + std::to_string(train_.input_width()) + " features do not fit the front end's " +
            std::to_string(frontend_.features()));
  check(train_.size() > 0, "no training utterances");
  check(augment_.vtlp >= 0 && augment_.vtlp <= 0.5,
        "speech task: vocal tract warp " + std::to_string(augment_.vtlp) + " outside [0, 0.5]");
  check(!augment_.wave.any() || int64_t(train_.audio.size()) == train_.size(),
        "speech task: waveform augmentation reads each training utterance's audio again, and the set names none");
}

const std::vector<std::vector<int64_t>>& SpeechTrainingTask::plan(int64_t epoch, int64_t rows) {
  if (epoch == planned_epoch_ && rows == planned_rows_) return batches_;
  const int64_t n = train_.size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const uint64_t key = splitmix64(splitmix64(seed_ ^ 0x5BEEC4ull) + uint64_t(epoch));
  shuffle(order, key);
  // Pools of 50 batches sorted by length, cut into batches: rows of a batch
  // have similar lengths, and the pools keep the epoch's order random.
  const int64_t pool = rows * 50;
  for (int64_t p = 0; p < n; p += pool)
    std::stable_sort(order.begin() + p, order.begin() + std::min(n, p + pool),
                     [&](int64_t a, int64_t b) { return train_.positions(a) < train_.positions(b); });
  batches_.clear();
  // Full batches only (the few left over differ from epoch to epoch); a set
  // smaller than one batch is one batch.
  for (int64_t at = 0; at + rows <= n; at += rows) batches_.emplace_back(order.begin() + at, order.begin() + at + rows);
  if (batches_.empty()) batches_.push_back(order);
  std::vector<int64_t> which(batches_.size());
  std::iota(which.begin(), which.end(), 0);
  shuffle(which, splitmix64(key ^ 0xBA7Cull));
  std::vector<std::vector<int64_t>> shuffled;
  for (int64_t w : which) shuffled.push_back(std::move(batches_[size_t(w)]));
  batches_ = std::move(shuffled);
  planned_epoch_ = epoch;
  planned_rows_ = rows;
  return batches_;
}

void SpeechTrainingTask::batch(int64_t step, int64_t rows, SequenceBatch& out) {
  const int64_t per_epoch = std::max<int64_t>(1, train_.size() / rows);
  const auto& batches = plan(step / per_epoch, rows);
  const std::vector<int64_t>& idx = batches[size_t(step % per_epoch)];
  auto row_key = [&](int64_t r) { return splitmix64(seed_ ^ splitmix64(uint64_t(step) * 0x10001ull + uint64_t(r))); };
  if (augment_.wave.any()) {
    std::vector<std::vector<float>> fresh = changed_waveforms(idx, row_key);
    gather_batch(train_, idx, stacked_, out, &fresh);
  } else {
    gather_batch(train_, idx, stacked_, out);
  }
  const int64_t W = train_.width;
  const int bins = frontend_.fbank_config().bins, stack = frontend_.stack();
  for (int64_t r = 0; r < out.rows; ++r) {
    float* rows = stacked_.data() + r * out.length * W;
    const int64_t n = out.lengths[size_t(r)];
    const uint64_t key = row_key(r);
    if (augment_.vtlp > 0) {  // rows of stacked frames are frames one after another
      const double u = double(splitmix64(key ^ 0x7E17Aull) >> 11) * 0x1.0p-53;
      frontend_.warp_normalized(rows, n * stack, 1 + augment_.vtlp * (2 * u - 1));
    }
    if (augment_.masks) spec_augment(rows, n, bins, stack, augment_.spec, key);
  }
  window_batch(train_, stacked_, out);
}

// The stacked frames of each row whose waveform its key changes (read again
// from its file, augmented, through the front end); empty for the others,
// and for one the change made too short for its phones or too long.
std::vector<std::vector<float>> SpeechTrainingTask::changed_waveforms(
    const std::vector<int64_t>& idx, const std::function<uint64_t(int64_t)>& row_key) const {
  const int64_t rows = int64_t(idx.size());
  const int bins = frontend_.fbank_config().bins;
  std::vector<std::vector<float>> fresh(static_cast<size_t>(rows));
  std::vector<std::exception_ptr> error(static_cast<size_t>(rows));
  auto other = [&](uint64_t k) { return read_audio(train_.audio[size_t(k % uint64_t(train_.size()))]); };
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t key = splitmix64(row_key(r) ^ 0x3A7Eull);
    if (!augment_.wave.changes(key)) continue;
    try {
      const int64_t i = idx[size_t(r)];
      const std::vector<float> raw =
          frontend_.filterbank(augment_waveform(read_audio(train_.audio[size_t(i)]), augment_.wave, key, other));
      const int64_t positions = frontend_.positions(int64_t(raw.size()) / bins);
      const int32_t* phones = train_.phones.labels.data() + train_.phones.offsets[size_t(i)];
      if (positions < ctc_min_frames(phones, train_.phones.length(i)) ||
          (augment_.max_positions > 0 && positions > augment_.max_positions))
        continue;
      fresh[size_t(r)] = frontend_.encoder_inputs(raw, FrameWindow{frontend_.stack()});
    } catch (...) {
      error[size_t(r)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : error)
    if (e) std::rethrow_exception(e);
  return fresh;
}

double SpeechTrainingTask::epoch(int64_t step, int64_t rows) const {
  return double(step) / double(std::max<int64_t>(1, train_.size() / rows));
}

Evaluation SpeechTrainingTask::evaluate(ReplicaSet& replicas, const ForwardOptions& options) {
  const SpeechScore s = score_speech(replicas.model(), valid_, std::max<int64_t>(planned_rows_, 8), options);
  Evaluation e;
  e.loss = s.loss;
  e.error_rate = s.overall.rate();
  e.examples = s.utterances;
  return e;
}

}  // namespace lt
