// Speech corpora: the phone set, pronunciation lexicons, and utterance lists
// (lt's TSV manifest, or the LibriSpeech folder layout).
//
//   lt::Lexicon lex = lt::read_lexicon("/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict");
//   std::vector<lt::Utterance> train = lt::read_manifest("data/speech/train.tsv", &lex);
//
// Manifest: a header line naming the tab-separated columns, in any order:
//   path        audio file, relative to the manifest's folder (or absolute)
//   duration_s  seconds (optional)
//   speaker     who or which voice (optional; PER is reported per speaker)
//   words       the transcript (optional)
//   phones      space-separated ARPAbet phones; stress digits are dropped.
//               Without it (or when empty) the words' pronunciations are used.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/shipped_files.h"  // default_lexicon_path(), the lexicon when none is given

namespace lt {

// The 39 ARPAbet phones of the CMU dictionary without stress; id 0 is the
// CTC blank, the phones are 1..39 in the order AA AE AH AO AW AY B CH D DH EH
// ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH.
constexpr int kPhoneClasses = 40;
const std::vector<std::string>& phone_names();  // index = id; [0] = "<blank>"
// A phone's id, ignoring case and a stress digit (AH0 -> AH); -1 if not one of the 39.
int32_t phone_id(const std::string& name);

struct Lexicon {
  std::string name = "a lexicon made in memory";  // for messages: the file it was read from
  std::unordered_map<std::string, std::vector<int32_t>> words;  // upper-case word -> phones (first pronunciation)
  // Its other pronunciations, distinct from the first ("word(2)", ...):
  // recognition tries each; references use the first.
  std::unordered_map<std::string, std::vector<std::vector<int32_t>>> alternates;
  std::vector<int32_t> phones_of(const std::string& word) const;  // any case; empty if unknown
};
// CMU-dictionary format: "word PH ON ES" per line; alternates "word(2)" go
// to `alternates` (stress marks dropped, repeats of a pronunciation left
// out); ";;;" comments are skipped; a "#" starts a comment at the end of a
// line. Every word needs at least one phone, each one of the 39 (errors
// name file:line).
Lexicon read_lexicon(const std::string& path);
// The words of a word list (whitespace-separated, "#" to the end of a line
// a comment) with their pronunciations (and alternates) from `from`: the vocabulary of
// command-style recognition. A word `from` cannot pronounce, or an empty
// list, is one line naming path:line.
Lexicon read_vocabulary(const std::string& path, const Lexicon& from);
// A grammar for command-style recognition: one phrase a line (words
// whitespace-separated, "#" to the end of a line a comment), each of which
// may be said alone and whole (lt::phrase_model scores them). Its lexicon
// holds the phrases' words, pronounced by `from`; a word `from` cannot
// pronounce, or a file without phrases, is one line naming path:line.
struct Grammar {
  Lexicon lexicon;
  std::vector<std::vector<std::string>> phrases;  // upper-case words
};
Grammar read_grammar(const std::string& path, const Lexicon& from);

struct Utterance {
  std::string audio;      // the file's path as the program can open it
  double duration = 0;    // seconds; 0 when not given
  std::string speaker, words;
  std::vector<int32_t> phones;
};
// Errors name file:line: missing columns, bad numbers, unknown phones, words
// without phones that the lexicon (or its absence) cannot pronounce.
std::vector<Utterance> read_manifest(const std::string& path, const Lexicon* lexicon = nullptr);
// LibriSpeech: DIR/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt, lines
// "<id> WORDS...", audio <id>.flac beside it; phones from the lexicon. An
// unknown word is an error naming the file, line and word, unless
// skip_unknown, which leaves the utterance out and counts it in *skipped.
std::vector<Utterance> read_librispeech(const std::string& dir, const Lexicon& lexicon, bool skip_unknown = false,
                                        int64_t* skipped = nullptr);

// A manifest (TSV) or a LibriSpeech folder, as the tools take --data and
// --ref: words without phones are pronounced through lexicon_path (empty: the
// default lexicon when it is installed; a manifest with phones needs none).
std::vector<Utterance> read_corpus(const std::string& path, const std::string& lexicon_path = "");

// Words of a transcript: upper case, split on spaces and tabs.
std::vector<std::string> split_words(const std::string& text);

}  // namespace lt
