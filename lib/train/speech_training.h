// Speech data as the encoder reads it, and the speech task of the one
// training loop (CTC over phones, the paper's section 4.3).
//
//   auto raw = lt::compute_filterbanks(utterances, frontend);     // threads over utterances
//   frontend.set_statistics(lt::filterbank_statistics(raw, 40));  // training set only
//   lt::SpeechSet train = lt::make_speech_set(utterances, raw, frontend, max_positions);
//   lt::SpeechTrainingTask task(std::move(train), std::move(valid), seed, frontend);
//   lt::train_model(model, trainer, task, settings, on_event);
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "audio/fbank.h"
#include "heads/ctc.h"
#include "heads/edit_distance.h"
#include "speech/speech_corpus.h"
#include "speech/speech_model.h"
#include "train/training_loop.h"

namespace lt {

// Utterances in memory: normalised filterbank frames, stacked, and phone
// labels. The window's context frames are added per batch (each position
// would hold its neighbours' frames again), after the augmentation.
struct SpeechSet {
  int64_t width = 0;            // features per position before context: bins x stack
  FrameWindow window;           // of the front end that made the set
  std::vector<float> inputs;    // every utterance's positions, concatenated
  std::vector<int64_t> start;   // utterance i is positions start[i] .. start[i+1]-1
  CtcTargets phones;            // utterance i's phone ids
  std::vector<std::string> speakers;
  std::vector<std::string> audio;  // utterance i's file, read again for waveform augmentation
  int64_t size() const { return int64_t(speakers.size()); }
  int64_t positions(int64_t i) const { return start[i + 1] - start[i]; }
  int64_t input_width() const { return width / window.stack * window.frames(); }  // what the encoder reads
};

// Raw log mel frames [frames, bins] of each utterance's audio (read_audio:
// any format, resampled to 16 kHz), over the available threads. Errors name
// the audio file.
std::vector<std::vector<float>> compute_filterbanks(const std::vector<Utterance>& utterances,
                                                    const SpeechFrontEnd& frontend);
FeatureStats filterbank_statistics(const std::vector<std::vector<float>>& raw, int bins);

struct SpeechSetReport {
  int64_t too_short = 0;  // fewer positions than CTC needs for their phones
  int64_t too_long = 0;   // more positions than max_positions
  int64_t no_phones = 0;  // nothing to recognise
};
// Normalised and stacked by frontend (which must have statistics). Utterances
// that cannot be trained on are left out and counted in report.
SpeechSet make_speech_set(const std::vector<Utterance>& utterances, const std::vector<std::vector<float>>& raw,
                          const SpeechFrontEnd& frontend, int64_t max_positions, SpeechSetReport* report = nullptr);

// Loss and phone error rate of a CTC model on a set, decoded as decoding
// says (greedy by default). Batches of similar lengths.
struct SpeechScore {
  double loss = 0;  // nats per phone
  ErrorCounts overall;
  std::map<std::string, ErrorCounts> by_speaker;
  int64_t utterances = 0;
};
SpeechScore score_speech(SequenceModel& model, const SpeechSet& set, int64_t batch, const ForwardOptions& options,
                         const CtcBeamOptions& decoding = {});

// Changes to an utterance's waveform before the front end (audio/augment.h),
// in this order, each with its probability and its parameter drawn
// uniformly from [lo, hi]; lt-train's --speed, --reverb, --noise,
// --telephone, --codec and --clipping, written P or P:LO:HI.
struct WaveAugmentation {
  struct Draw {
    double p = 0, lo = 0, hi = 0;
  };
  Draw speed{0, 0.9, 1.1};   // the speed factor (tempo and pitch)
  Draw reverb{0, 0.2, 1.0};  // a room's rt60 in seconds; its direct-to-reverberant ratio from 0 to 10 dB
  Draw noise{0, 5, 25};      // the SNR in dB: coloured noise (1/f^0..2) or a babble of 3 to 5 other utterances
  Draw telephone{0, 0, 0};   // the telephone band, then mu-law or A-law
  Draw codec{0, 0, 0};       // GSM 6.10, MP3 or Opus at their lowest rates
  Draw clip{0, 6, 20};       // gain in dB, then clipping at full scale
  bool any() const { return speed.p + reverb.p + noise.p + telephone.p + codec.p + clip.p > 0; }
  // Whether augment_waveform would change anything under this key.
  bool changes(uint64_t key) const;
  // "speed=P:LO:HI ..." of the draws with a probability, for metadata; parse()'s input per flag.
  std::string describe() const;
};
// A flag's text, P or P:LO:HI, over its defaults; one line naming the flag otherwise.
WaveAugmentation::Draw parse_wave_draw(const std::string& flag, const std::string& text,
                                       const WaveAugmentation::Draw& defaults);
std::string wave_draw_text(const WaveAugmentation::Draw& d);  // "P:LO:HI", parse_wave_draw's inverse
// x through the augmentations that key draws. other(k) returns the samples
// of another training utterance picked by k, for babble.
std::vector<float> augment_waveform(std::vector<float> x, const WaveAugmentation& w, uint64_t key,
                                    const std::function<std::vector<float>(uint64_t)>& other);

// What training changes in each utterance, drawn from (seed, step, row):
// first the waveform (read again from its file), then the vocal tract warp,
// then SpecAugment's masks.
struct SpeechAugmentation {
  WaveAugmentation wave;
  bool masks = false;  // SpecAugment (lt-train --spec-augment)
  SpecAugment spec;
  double vtlp = 0;     // MelWarp by alpha uniform in [1 - vtlp, 1 + vtlp] (--vtlp); 0: none
  int64_t max_positions = 0;  // an utterance the waveform changes past this keeps its own frames (0: no limit)
};

// The task: batches of utterances of similar length (bucketing keeps padding
// a small share), drawn in an order that is a function of (seed, step), with
// the augmentation drawn from the same. The front end is the one that made
// the sets (its frame stack, filterbank and statistics).
class SpeechTrainingTask final : public TrainingTask {
 public:
  SpeechTrainingTask(SpeechSet train, SpeechSet valid, uint64_t seed, SpeechFrontEnd frontend,
                     const SpeechAugmentation& augmentation = {});
  void batch(int64_t step, int64_t rows, SequenceBatch& out) override;
  double epoch(int64_t step, int64_t rows) const override;
  Evaluation evaluate(ReplicaSet& replicas, const ForwardOptions& options) override;
  bool has_test_data() const override { return valid_.size() > 0; }
  const SpeechSet& train_set() const { return train_; }
  const SpeechSet& valid_set() const { return valid_; }

 private:
  const std::vector<std::vector<int64_t>>& plan(int64_t epoch, int64_t rows);
  std::vector<std::vector<float>> changed_waveforms(const std::vector<int64_t>& idx,
                                                    const std::function<uint64_t(int64_t)>& row_key) const;
  SpeechSet train_, valid_;
  uint64_t seed_;
  SpeechFrontEnd frontend_;
  SpeechAugmentation augment_;
  int64_t planned_epoch_ = -1, planned_rows_ = 0;
  std::vector<std::vector<int64_t>> batches_;
  std::vector<float> stacked_;  // a batch's rows before context frames, reused
};

}  // namespace lt
