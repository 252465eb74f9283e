// Speech recognition models (the paper's section 4.3): a filterbank front end
// and a SequenceModel of family "speech" whose input part projects feature
// frames and whose head is CTC over the 39 phones and the blank.
//
//   audio 16 kHz -> Fbank (40 log mel) -> (x - mean) * inv_std -> stack k frames
//                -> SequenceModel (bidirectional or causal stack, or a
//                   bidirectional LSTM) -> CTC logits
//
//   lt::SpeechModel m = lt::load_speech_model("asr.safetensors", lt::Device::cpu);
//   std::vector<float> frames = m.frontend.frames_of(samples);   // [T, features]
//
// The front end's settings are checkpoint metadata (fbank.*, frame_stack),
// its statistics the tensors frontend.mean and frontend.inv_std.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lt/fbank.h"
#include "lt/safetensors.h"
#include "lt/sequence_model.h"

namespace lt {

class SpeechFrontEnd {
 public:
  // stack: filterbank frames per encoder position (1 = the paper's 10 ms).
  SpeechFrontEnd(const FbankConfig& fbank = {}, int stack = 1);
  const FbankConfig& fbank_config() const { return fbank_->config(); }
  const Fbank& fbank() const { return *fbank_; }
  int stack() const { return stack_; }
  int64_t features() const { return int64_t(fbank_->config().bins) * stack_; }
  // Normalisation statistics of the training set, per filterbank bin.
  void set_statistics(const FeatureStats& stats);
  bool has_statistics() const { return !mean_.empty(); }
  // Raw log mel frames [fbank frames, bins] of 16 kHz samples (unnormalised).
  std::vector<float> filterbank(const std::vector<float>& samples) const;
  // frames [n, bins] = (frames - mean) * inv_std, in place.
  void normalize(float* frames, int64_t n) const;
  // MelWarp by alpha on normalised frames [n, bins], in place: the log
  // energies they stand for are warped and normalised again.
  void warp_normalized(float* frames, int64_t n, double alpha) const;
  // Normalised, stacked encoder inputs [positions(raw frames), features] of raw filterbank frames.
  std::vector<float> encoder_inputs(const std::vector<float>& raw) const;
  int64_t positions(int64_t raw_frames) const { return stacked_frames(raw_frames, stack_); }
  // Checkpoint entries: metadata fbank.* and frame_stack, tensors frontend.*.
  std::map<std::string, std::string> metadata() const;
  std::map<std::string, Tensor> tensors() const;
  static SpeechFrontEnd from_checkpoint(const Checkpoint& checkpoint);

 private:
  std::shared_ptr<const Fbank> fbank_;  // shared by copies: its FFT plan is made once
  int stack_;
  std::vector<float> mean_, inv_std_;
};

// The paper's encoder (9 layers, 6 heads of 32, feed-forward 4 x d,
// bidirectional linear attention) with a CTC head over kPhoneClasses.
SequenceModelConfig speech_model_config(const TransformerConfig& transformer, int64_t features, int64_t classes,
                                        int64_t max_positions);
// The paper's Bi-LSTM baseline (Table 3: 3 layers of 320 per direction) over
// the same frames and CTC head.
SequenceModelConfig speech_model_config(const LstmConfig& lstm, int64_t features, int64_t classes,
                                        int64_t max_positions);

struct SpeechModel {
  std::unique_ptr<SequenceModel> model;
  SpeechFrontEnd frontend;
};
// Errors name the file: not a speech model, or a front end it lacks.
SpeechModel load_speech_model(const std::string& path, Device device);

}  // namespace lt
