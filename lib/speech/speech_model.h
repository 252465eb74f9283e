// Speech recognition models (the paper's section 4.3): a filterbank front end
// and a SequenceModel of family "speech" whose input part projects feature
// frames and whose head is CTC over the 39 phones and the blank.
//
//   audio 16 kHz -> Fbank (40 log mel) -> (x - mean) * inv_std -> a window of
//                   frames per position (k stacked, with context: FrameWindow)
//                -> SequenceModel (bidirectional or causal stack, or a
//                   bidirectional LSTM) -> CTC logits
//
//   lt::SpeechModel m = lt::load_speech_model("asr.safetensors", lt::Device::cpu);
//   std::vector<float> frames = m.frontend.frames_of(samples);   // [T, features]
//
// The front end's settings are checkpoint metadata (fbank.*, frame_stack,
// frame_past, frame_future),
// its statistics the tensors frontend.mean and frontend.inv_std.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "audio/fbank.h"
#include "io/safetensors.h"
#include "model/sequence_model.h"

namespace lt {

class SpeechFrontEnd {
 public:
  // window: the filterbank frames of one encoder position (stack 1 without
  // context: the paper's 10 ms frames).
  SpeechFrontEnd(const FbankConfig& fbank = {}, const FrameWindow& window = {});
  const FbankConfig& fbank_config() const { return fbank_->config(); }
  const Fbank& fbank() const { return *fbank_; }
  const FrameWindow& window() const { return window_; }
  int stack() const { return window_.stack; }
  // Encoder inputs per position: bins x the window's frames.
  int64_t features() const { return int64_t(fbank_->config().bins) * window_.frames(); }
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
  // Normalised encoder inputs [positions(raw frames), features] of raw filterbank frames.
  std::vector<float> encoder_inputs(const std::vector<float>& raw) const { return encoder_inputs(raw, window_); }
  // The same with another window of frames (training keeps stacks without context).
  std::vector<float> encoder_inputs(const std::vector<float>& raw, const FrameWindow& window) const;
  int64_t positions(int64_t raw_frames) const { return window_.positions(raw_frames); }
  // Checkpoint entries: metadata fbank.*, frame_stack, frame_past and
  // frame_future (0 when absent: files from before context), tensors frontend.*.
  std::map<std::string, std::string> metadata() const;
  std::map<std::string, Tensor> tensors() const;
  static SpeechFrontEnd from_checkpoint(const Checkpoint& checkpoint);

 private:
  std::shared_ptr<const Fbank> fbank_;  // shared by copies: its FFT plan is made once
  FrameWindow window_;
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
