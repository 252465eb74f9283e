// Words from a CTC phone recogniser: a prefix beam search whose hypotheses
// are sequences of lexicon words, scored by the acoustic model and a word
// n-gram language model, over frames that arrive one at a time.
//
//   lt::Lexicon lex = lt::read_lexicon(".../cmudict-en-us.dict");
//   lt::LanguageModel lm = lt::read_arpa("weights/speech-words.arpa.gz");
//   lt::WordSearch search(lex, &lm, options);
//   for each frame: search.push(logits_row);                 // [kPhoneClasses] logits
//                   for (auto& w : search.take_settled()) print(w.word);  // final words, as soon as they are
//   for (auto& w : search.finish().words) print(w.word);     // the rest; the search starts over
//
// A hypothesis is a word sequence and a position in the pronunciation trie
// of the word being spoken. Like the prefix beam decoder (heads/ctc.h), it keeps two scores, the
// alignments of its phones ending in a blank and in its last phone, summed
// over every alignment; hypotheses with the same words and trie position
// merge. A word ends when its last phone is emitted: its score then gains
// lm_weight · ln P_LM(word | history) + word_bonus. With a beam wide enough
// the search is exact: it finds the word sequence W with the largest
// ln P_CTC(phones(W) | x) + lm_weight · ln P_LM(W </s>) + word_bonus · |W|.
//
// Words the language model does not know score as its <unk>; when the model
// has no <unk>, they are left out of the search (lm = nullptr: every word of
// the lexicon, scored by the acoustics and word_bonus alone).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "heads/ctc.h"
#include "speech/language_model.h"
#include "speech/speech_corpus.h"

namespace lt {

struct WordSearchOptions {
  int beam = 16;               // hypotheses kept after each frame
  double lm_weight = 1.0;      // weight of the language model's log-probability
  double word_bonus = 0.0;     // added per word (log scale): > 0 favours more, shorter words
  float prune = -1e30f;        // phones whose log-probability at a frame is below this are not extended (e.g. -10)
  // Hypotheses that still disagree with the best one about a word it
  // finished more than this many frames ago give way to it, so words settle
  // within a bounded delay and memory stays bounded (a search alone can keep
  // two rivals for ever). A stream's latency: lower settles sooner, less
  // accurately.
  int max_delay = 100;
};

struct RecognizedWord {
  std::string word;
  std::vector<int32_t> phones;  // its pronunciation, phone ids 1..39
  // Frames are pushes counted from the utterance's start (a model position:
  // frame_stack × 10 ms of audio), taken from the strongest contribution
  // wherever hypotheses merge. A merged hypothesis has one set for its
  // blank- and phone-ending alignments, so a doubled phone (whose repeat
  // needs a blank between) can show a span a frame shorter than it needs.
  int64_t first_frame = 0;  // the frame that first emits its first phone
  int64_t last_frame = 0;   // the frame that first emits its last phone
};

struct WordSearchResult {
  std::vector<RecognizedWord> words;  // those not already taken by take_settled()
  // ln P_CTC + lm_weight · ln P_LM (with </s>) + word_bonus · words, of the
  // whole utterance; -inf when no hypothesis in the beam ended on a word
  // boundary (then words are the best hypothesis's finished words).
  double score = 0;
};

struct WordVocabulary;  // a lexicon's searchable words and their trie, for one language model

class WordSearch {
 public:
  // The lexicon is copied; lm (nullptr: none) must outlive the search.
  WordSearch(const Lexicon& lexicon, const LanguageModel* lm, const WordSearchOptions& options = {});
  // The same over a vocabulary made once and shared by many searches (a
  // stream group's streams): vocabulary(lexicon, lm), with the same lm.
  WordSearch(std::shared_ptr<const WordVocabulary> vocabulary, const LanguageModel* lm,
             const WordSearchOptions& options = {});
  static std::shared_ptr<const WordVocabulary> vocabulary(const Lexicon& lexicon, const LanguageModel* lm);
  ~WordSearch();
  WordSearch(WordSearch&&) noexcept;
  WordSearch& operator=(WordSearch&&) noexcept;

  // One frame's logits [kPhoneClasses] (before the softmax; class 0 is the
  // blank); or `frames` rows of them. A non-finite logit is an lt::Error.
  void push(const float* logits_row);
  void push(const float* logits, int64_t frames);
  // Words every hypothesis in the beam agrees on, that were not taken yet:
  // nothing later can change them. Taking them keeps memory bounded however
  // long the stream.
  std::vector<RecognizedWord> take_settled();
  // The best hypothesis's words after the settled ones: may still change.
  std::vector<RecognizedWord> pending() const;
  // Ends the utterance (adds ln P(</s>)), returns the best word sequence's
  // words not yet taken and starts over, as reset() does.
  WordSearchResult finish();
  void reset();
  // Asks for the hypotheses and words the next push() reads first, so that a
  // caller decoding many searches in turn can have the next one's arrive
  // while it works on this one.
  void prefetch() const;

  int64_t frames() const;      // pushed since the start of the utterance
  int64_t vocabulary() const;  // lexicon words the search can recognise

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Command-style words from a grammar file (lt::read_grammar): `lexicon`
// becomes the phrases' words (pronounced by it), `options` cuts no phone
// (few words: cheap, and a whole phrase always fits), and the phrase model
// (lt::phrase_model) comes back, for the search to score with.
LanguageModel use_grammar(const std::string& path, Lexicon& lexicon, WordSearchOptions& options);

// Phones decoded with a phone n-gram model (an ARPA model over the 39 phone
// names): the search above over a lexicon whose words are the phones, each
// spelt by itself. It finds the phones P with the largest ln P_CTC(P | x) +
// lm_weight · ln P_LM(P </s>) + word_bonus · |P|. A token's start and end are
// the frame that first emits it.
std::unique_ptr<CtcDecoder> make_phone_lm_decoder(const LanguageModel& lm, const WordSearchOptions& options);

}  // namespace lt
