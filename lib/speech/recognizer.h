// Speech recognition with a trained speech model: whole recordings of any
// length (SpeechRecognizer), and audio that arrives in pieces, decoded as it
// comes (SpeechStream: the causal linear model run as an RNN, its state
// continued over each piece in one pass).
//
//   lt::SpeechModel m = lt::load_speech_model("asr.safetensors", lt::Device::cpu);
//   lt::SpeechRecognizer r(m);
//   lt::Transcript t = r.transcribe(lt::read_audio("utt.flac"));
//   for (const lt::CtcToken& p : t.phones) printf("%s ", lt::phone_names()[p.label].c_str());
//
//   lt::SpeechStream s(m);                   // causal-linear models only
//   s.push(samples.data(), n);               // as they arrive
//   s.take_settled(phones);                  // final phones so far
//   s.finish();
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/precision.h"
#include "heads/ctc.h"
#include "speech/language_model.h"
#include "speech/speech_corpus.h"
#include "speech/speech_model.h"
#include "speech/word_search.h"

namespace lt {
namespace speech {
class Decoding;       // lib/speech/decoding.h
class CausalEncoder;  // lib/speech/causal_encoder.h
struct StreamMember;  // lib/speech/stream_member.h
}  // namespace speech

struct RecognizerOptions {
  CtcBeamOptions decoding;  // phones: beam 1 is greedy
  Precision precision;      // the encoder's products (the head stays fp32)
  // Words too, when a lexicon is given: the lexicon-constrained search with
  // the language model lm (nullptr: none). Both must outlive the recognizer.
  const Lexicon* lexicon = nullptr;
  const LanguageModel* lm = nullptr;
  // The word and phone searches' beam, weight and bonus: tuned on half of
  // the validation set with the shipped models (docs/speech.md, "Words" and
  // "Decoding defaults").
  WordSearchOptions words{64, 1.0, 0.0};
  // Phones decoded with this phone n-gram model (make_phone_lm_decoder, with
  // phone_search's beam, weight and bonus) instead of by `decoding` alone;
  // nullptr: none. It must outlive the recognizer.
  const LanguageModel* phone_lm = nullptr;
  WordSearchOptions phone_search{64, 1.25, 2.5};
  // Recognition starts afresh after this many seconds whose likeliest class
  // is the blank, so that long recordings and streams do not decay: a causal
  // model restarts its state (lib/speech/causal_encoder.h), a model that sees
  // both sides encodes each stretch between pauses on its own. 0: never.
  // 0.4 s leaves recordings of a sentence as they were and cuts long ones
  // (docs/speech.md, "Long recordings").
  double pause_seconds = 0.4;
};

// Seconds spent in each part.
struct RecognitionTimes {
  double frontend = 0, encoder = 0, decoder = 0;
  double total() const { return frontend + encoder + decoder; }
};

// Phones (and words) with encoder positions as their frames.
struct Transcript {
  std::vector<CtcToken> phones;
  std::vector<RecognizedWord> words;  // with RecognizerOptions::lexicon
  int64_t positions = 0;
  double duration = 0;  // seconds of audio
  RecognitionTimes times;
};

// Seconds from the start of the audio to the start of encoder position p:
// p * frame_stack * hop. A token spans [start(p0), start(p1 + 1)), cut at
// the end of the audio.
double position_start_seconds(const SpeechFrontEnd& frontend, int64_t position);
// Whole positions in `seconds` (at least 1 when seconds > 0; 0 when 0).
int64_t positions_in(const SpeechFrontEnd& frontend, double seconds);
// The decoders' max_delay in positions for a delay of `seconds`: the most
// positions that, with the audio a position needs past its own end (its
// last frame's overhang and any future frames: 15 ms for the shipped
// models), fit in it, so that a phone or word settles at most `seconds`
// after its audio ends. 0 when not even one does.
int64_t delay_positions(const SpeechFrontEnd& frontend, double seconds);

class SpeechStreamGroup;

class SpeechRecognizer {
 public:
  // model must outlive the recognizer.
  explicit SpeechRecognizer(SpeechModel& model, const RecognizerOptions& options = {});
  ~SpeechRecognizer();
  // 16 kHz samples (read_audio) to phones.
  Transcript transcribe(const std::vector<float>& samples);
  // The CTC logits [positions, classes] of encoder inputs [positions,
  // features] of any length, started afresh in pauses
  // (RecognizerOptions::pause_seconds). A causal linear model continues its
  // state from position to position; any other model encodes each stretch
  // between pauses in windows of max_positions overlapping by half, each
  // position from the window it is deepest inside, so every position has at
  // least a quarter window of context on each side (or all there is).
  std::vector<float> logits(const std::vector<float>& inputs, int64_t positions);

 private:
  // A model that sees both sides over inputs [positions, features] in
  // windows: logits [positions, classes] into out.
  void windowed(const float* inputs, int64_t positions, float* out);

  SpeechModel& model_;
  RecognizerOptions options_;
  SequenceBatch batch_;
  std::unique_ptr<speech::Decoding> decoding_;  // made by the constructor, reset by each transcribe
};

// A causal linear model run as an RNN over audio pushed in any pieces:
// memory stays constant, and each phone is handed out as soon as it is
// final. Its phones equal those of SpeechRecognizer on the whole recording
// up to float rounding (a step per position here, chunks there). Other
// models are refused (lt::Error): a bidirectional model needs the whole
// recording, a softmax model's cache grows with the stream.
//
// Every stream belongs to a SpeechStreamGroup, whose step runs all of its
// streams together (one batched encoder step per position over a StatePool).
// A stream made on its own is a group of one that steps at every push; a
// group's streams (SpeechStreamGroup::open) only queue what is pushed, and
// the group's step decodes it. Either way a stream's phones and words are
// the same bits, whatever else shares its steps.
class SpeechStream {
 public:
  // A stream of its own: push decodes at once.
  explicit SpeechStream(SpeechModel& model, const RecognizerOptions& options = {});
  ~SpeechStream();
  // Samples at 16 kHz or the rate set; decodes every encoder position they
  // complete (in a group: queues them for the next step). Any thread, in a group.
  void push(const float* samples, int64_t n);
  // The rate of what push receives (16 kHz until set), resampled to 16 kHz
  // (libsoxr) as it arrives; set before the first push.
  void set_input_rate(double rate);
  // The end of the audio: the last partial position, then every phone settles.
  void finish();
  // Appends the phones (and words, when decoded) settled since the last call.
  void take_settled(std::vector<CtcToken>& phones, std::vector<RecognizedWord>* words = nullptr);
  // The best guess at what follows those settled (may still change).
  std::vector<CtcToken> tentative() const;
  std::vector<RecognizedWord> tentative_words() const;
  // finish() was called and a step has settled everything.
  bool done() const;
  int64_t samples() const;    // decoded so far, at 16 kHz
  int64_t positions() const;  // encoder positions so far
  RecognitionTimes times() const;

 private:
  friend class SpeechStreamGroup;
  explicit SpeechStream(std::shared_ptr<speech::StreamMember> member);
  std::unique_ptr<SpeechStreamGroup> own_;  // a stream of its own
  std::shared_ptr<speech::StreamMember> member_;
};

// What one SpeechStreamGroup::step did.
struct StreamStepStats {
  int64_t streams = 0;    // open
  int64_t stepped = 0;    // streams that consumed a position
  int64_t positions = 0;  // encoder positions, all streams together
  int64_t rounds = 0;     // batched encoder calls (more than one when a pause restarted a stream mid-step)
  int64_t finished = 0;   // streams whose end was decoded
  double seconds = 0, encoder_seconds = 0;
};

// The streams of one model stepped together (lt.h's lt_stream_group): each
// step takes every stream's queued audio through its front end, runs one
// batched encoder step over every position ready (each stream's a run of
// its row, at its own positions: a stream's restart after every pause),
// then every stream's decoders. Front ends and decoders run over the streams on
// OpenMP's threads, the batched products inside the same threads, so
// nothing oversubscribes the cores. Streams may be opened, pushed to,
// finished, read and closed from any thread, also during a step; steps run
// one at a time.
class SpeechStreamGroup {
 public:
  // model (a causal linear one) and the options' models must outlive the group.
  explicit SpeechStreamGroup(SpeechModel& model, const RecognizerOptions& options = {});
  ~SpeechStreamGroup();
  std::unique_ptr<SpeechStream> open();
  StreamStepStats step();
  int64_t streams() const;
  // Bytes of one stream's recurrent state in the pool.
  int64_t state_bytes() const;

 private:
  SpeechModel& model_;
  RecognizerOptions options_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lt
