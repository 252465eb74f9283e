// lt-asr's results: one line per input (path TAB phones) or one JSON object
// per input, written as each input ends; in --stream mode the phones also
// appear as they settle (appended on a pipe, one line redrawn on a
// terminal). With --ref, each input is scored against its reference.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lt/edit_distance.h"
#include "lt/recognizer.h"

namespace lt::app {

struct AsrResult {
  std::string path;
  std::vector<CtcToken> phones;  // encoder positions
  double duration = 0;           // seconds of audio
  double wall = 0;               // seconds from the first byte read to the last phone
  RecognitionTimes times;
  // --stream: from the arrival of the audio that completed a phone to its printing.
  int64_t latency_count = 0;
  double latency_mean = 0, latency_max = 0;
};

// References by audio file (--ref: a manifest or a LibriSpeech folder).
class References {
 public:
  References() = default;
  References(const std::string& path, const std::string& lexicon);
  bool empty() const { return by_path_.empty(); }
  // The reference phones of an input, found by its canonical path, else by
  // its file name without extension (LibriSpeech's utterance ids).
  const std::vector<int32_t>* find(const std::string& input) const;

 private:
  std::map<std::string, std::vector<int32_t>> by_path_, by_stem_;
};

class AsrOutput {
 public:
  AsrOutput(bool json, const std::string& model, const SpeechFrontEnd& frontend, const References& refs);
  // --stream text: the input's line as it grows: phones settled since the
  // last call (printed at once), and on a terminal the tentative ones after
  // them, redrawn. Nothing is kept but a terminal line's visible tail.
  void begin(const std::string& path);
  void update(const std::vector<CtcToken>& fresh, const std::vector<CtcToken>& tentative);
  // The input's end: its line (after begin/update, the end of the line
  // already printed), or its JSON object; r.phones are scored with --ref.
  void write(const AsrResult& r);
  // An input failed: its open line, if any, ends where it is.
  void end_line();
  // Whether write() needs every phone in AsrResult (JSON or --ref).
  bool keeps_phones() const { return json_ || !refs_.empty(); }
  // The summary of --ref scoring on stderr (text) or as a last JSON line.
  void finish();

 private:
  std::string phone_text(const std::vector<CtcToken>& tokens) const;
  bool json_, terminal_;
  std::string model_;
  const SpeechFrontEnd& frontend_;
  const References& refs_;
  bool line_open_ = false, printed_any_ = false;
  std::string path_, shown_;  // the open line's input, and its settled phones' visible tail (terminal)
  ErrorCounts total_;
  int64_t scored_ = 0, unscored_ = 0;
};

}  // namespace lt::app
