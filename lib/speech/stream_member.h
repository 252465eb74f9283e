// One stream of a SpeechStreamGroup, in three parts by who touches them:
// what callers queue (any thread, under `in`), what the group's step works
// on (its thread and OpenMP's, never the callers'), and the decoder with
// what it settled (the step and any caller, under `out`: a caller asks the
// decoder for the tentative tail only when it wants it). A SpeechStream
// holds it beside the group, so either may go first.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "audio/fbank.h"
#include "audio/resampler.h"
#include "speech/decoding.h"
#include "speech/pause_finder.h"
#include "speech/recognizer.h"

namespace lt::speech {

struct StreamMember {
  StreamMember(const SpeechModel& model, const RecognizerOptions& options, int64_t pause,
               const std::shared_ptr<const WordVocabulary>& words)
      : fbank(model.frontend.fbank()), pauses(pause), decoder(model.model->config().head.width(), options, words) {}

  // ---- queued by callers ----
  std::mutex in;
  std::vector<float> queued;  // samples not yet taken by a step
  bool finish_asked = false;
  bool pushed = false;  // a rate is set before the first push
  std::atomic<bool> closed{false};  // its SpeechStream is gone: the step gives its row back

  // ---- the step's ----
  int64_t row = -1;  // in the group's pool, once a step has seen it
  std::unique_ptr<audio::Resampler> resampler;  // pushes at another rate than 16 kHz
  std::vector<float> resampled;
  FbankStream fbank;
  PauseFinder pauses;  // a pause restarts the row (causal_encoder.h says why)
  std::vector<float> taken;   // this step's samples
  std::vector<float> raw;     // their filterbank frames
  std::vector<float> frames;  // normalised frames first.. that positions still read
  int64_t first = 0;
  int64_t samples = 0, t = 0;  // decoded so far; positions encoded
  bool finishing = false, finished = false;
  int64_t ready = 0;           // positions this step encodes
  int64_t redo = 0;            // the first of them a round has yet to encode (after a pause, from the restarted row)
  std::vector<float> inputs;   // their windows of frames [ready, features]
  std::vector<float> logits;   // their logits [ready, classes]
  RecognitionTimes times;

  // ---- decoded and handed out ----
  mutable std::mutex out;
  Decoding decoder;
  std::vector<CtcToken> settled;
  std::vector<RecognizedWord> settled_words;
  bool done = false;
  int64_t samples_out = 0, positions_out = 0;
  RecognitionTimes times_out;
};

}  // namespace lt::speech
