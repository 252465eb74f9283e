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

#include <nlohmann/json.hpp>

#include "lt.h"

namespace lt::app {

// A phone or word with its times in seconds, as lt.h hands it out.
struct Token {
  std::string text;
  double start = 0, end = 0;
};
// A transcript's phones or words.
std::vector<Token> tokens_of(const lt_transcript* t, bool words);
std::vector<std::string> texts(const std::vector<Token>& tokens);

struct AsrResult {
  std::string path;
  std::vector<Token> phones;
  std::vector<Token> words;  // --words
  double duration = 0;       // seconds of audio
  double wall = 0;           // seconds from the first byte read to the last phone
  lt_timings times{};
  // --stream: from the arrival of the audio that completed a phone to its printing.
  int64_t latency_count = 0;
  double latency_mean = 0, latency_max = 0;
};

// References by audio file (--ref: a manifest or a LibriSpeech folder, read by lt_corpus_read).
struct Reference {
  std::vector<std::string> phones, words;
};
class References {
 public:
  References() = default;
  References(const std::string& path, const std::string& lexicon);
  bool empty() const { return by_path_.empty(); }
  // An input's reference, found by its canonical path, else by its file
  // name without extension (LibriSpeech's utterance ids).
  const Reference* find(const std::string& input) const;

 private:
  std::map<std::string, Reference> by_path_, by_stem_;
};

class AsrOutput {
 public:
  // words: the text line is path TAB words TAB phones (else path TAB phones).
  AsrOutput(bool json, bool words, const std::string& model, const References& refs);
  // --stream text: the input's line as it grows: the words (--words) or
  // phones settled since the last call, printed at once, and on a terminal
  // the tentative ones after them, redrawn. Nothing is kept but a terminal
  // line's visible tail.
  void begin(const std::string& path);
  void update(const std::vector<std::string>& fresh, const std::vector<std::string>& tentative);
  // The input's end: its line (after begin/update, the end of the line
  // already printed), or its JSON object; r.phones are scored with --ref.
  void write(const AsrResult& r);
  // An input failed: its open line, if any, ends where it is.
  void end_line();
  // Whether write() needs every phone in AsrResult (JSON, --ref or --words' last column).
  bool keeps_phones() const { return json_ || words_ || !refs_.empty(); }
  bool words() const { return words_; }
  // The summary of --ref scoring on stderr (text) or as a last JSON line.
  void finish();

 private:
  void score(const AsrResult& r, nlohmann::json* j);
  void start_line();
  bool json_, words_, terminal_;
  std::string model_;
  const References& refs_;
  bool line_open_ = false, started_ = false, printed_any_ = false;
  std::string path_, shown_;  // the open line's input, and its settled phones' visible tail (terminal)
  lt_error_counts total_{}, total_words_{};
  int64_t scored_ = 0, unscored_ = 0;
};

}  // namespace lt::app
