// Vosk's WebSocket protocol (vosk-server's asr_server), both directions, as
// pure functions of the bytes: no sockets, no models, so that the frame
// handling is tested and fuzzed alone (tests/fuzz/fuzz_server_requests.cpp).
//
// Client -> server:
//   {"config": {"sample_rate": R, "words": true}}   optional, before any audio;
//                                                    lt adds "format": "s16le"
//                                                    (default) or "f32le", and
//                                                    "model": a name the server
//                                                    was started with
//   binary frames of 16-bit little-endian mono PCM   (f32le: 32-bit floats)
//   {"eof": 1}                                       the end: the final result
//   {"reset": 1}                                     Vosk's: the current utterance's
//                                                    final result now, then on
// Server -> client, one text message per binary frame, reset and eof, as Vosk:
//   {"partial": "words so far"}                      the utterance's settled and tentative words
//   {"result": [{"word", "start", "end", "conf"}], "text": "..."}   an utterance's words
//                                                    ("result" only with "words": true)
// and lt's extras in each: "phones" (the phones settled since the previous
// message, with start and end), "tentative_phones", and in partials
// "settled" and "tentative" (the utterance's settled words and the guess
// after them). An utterance ends at a pause, as Vosk's endpointing does.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lt::server {

// A phone or word with its times in seconds from the start of the stream.
struct Token {
  std::string text;
  double start = 0, end = 0;
};

enum class SampleFormat { s16le, f32le };

// The rates a stream resamples from (lt_stream_set_rate's range).
constexpr double kMinSampleRate = 1000, kMaxSampleRate = 384000;

struct VoskConfig {
  double sample_rate = 16000;  // without a config, 16 kHz (lt's models' rate)
  bool words = false;
  SampleFormat format = SampleFormat::s16le;
};

// What one client frame asks for.
struct VoskEvent {
  enum Kind { config, audio, eof, reset } kind = config;
  std::vector<float> samples;  // audio: mono at the configured rate, in [-1, 1]
};

// The client's side of one connection. Every frame the protocol does not
// allow is one HttpError (400 / close 1007, or close 1008 for the length
// limit): JSON that is not an object of config, eof or reset; a config after
// audio or a reset, a rate outside 1 kHz .. 384 kHz, an unknown format or model; an
// audio frame that does not hold whole samples; NaN, infinite or samples
// beyond +-2 (f32le; within it, clipped to +-1 as lt's readers do); audio
// after eof; more than max_seconds of audio.
class VoskInput {
 public:
  // model_names: the names a config's "model" may take.
  VoskInput(std::vector<std::string> model_names, double max_seconds);
  VoskEvent text(std::string_view message);
  VoskEvent binary(std::string_view bytes);
  const VoskConfig& config() const { return config_; }
  bool ended() const { return ended_; }
  double seconds() const { return double(samples_) / config_.sample_rate; }

 private:
  std::vector<std::string> model_names_;
  double max_seconds_;
  VoskConfig config_;
  bool started_ = false, ended_ = false;  // started: audio or a reset came
  int64_t samples_ = 0;
};

// A stream's results after one step of the recognizer: what settled since
// the last step, the tentative tail, and how much audio has been decoded.
struct StreamResults {
  std::vector<Token> settled_words, settled_phones;
  std::vector<Token> tentative_words, tentative_phones;
  double decoded_seconds = 0;
};

// The frames a reply is owed for, in the order they came.
enum class Answer { audio, reset };

// The server's side: the Vosk replies of one stream, built from its results.
class VoskReplies {
 public:
  // words: the config's "words" (results carry their "result" array);
  // endpoint_seconds: the pause after an utterance's last word that ends it.
  VoskReplies(bool words, double endpoint_seconds);
  // The replies after a step of the recognizer: one per answer, in order (an
  // audio frame's is a partial, or the utterance's result when this step
  // found its end; a reset's is the utterance's result: its settled words,
  // while what is still tentative goes on into the next), then with `final`
  // (the stream ended in this step) the final result. Every settled phone
  // and word goes into exactly one message.
  std::vector<std::string> replies(const StreamResults& r, const std::vector<Answer>& answers, bool final);

 private:
  std::string result_message();
  std::string partial_message();
  bool words_;
  double endpoint_seconds_;
  std::vector<Token> utterance_;        // words settled since the last result
  std::vector<Token> phones_pending_;   // phones settled since the last message
  std::vector<Token> tentative_words_, tentative_phones_;
};

std::string joined_text(const std::vector<Token>& tokens);

}  // namespace lt::server
