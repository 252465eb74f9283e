// What a recognizer does with each position's logits: phones through the CTC
// decoder (or the phone language model's search), and with a lexicon words
// through the word search, all frame by frame, so offline and streaming
// recognition decode the same way.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "speech/recognizer.h"

namespace lt::speech {

class Decoding {
 public:
  // words: the lexicon's vocabulary made once for many decoders (a stream
  // group's), or null to make one of its own.
  Decoding(int64_t classes, const RecognizerOptions& options,
           const std::shared_ptr<const WordVocabulary>& words = nullptr)
      : classes_(classes), options_(options) {
    if (options.lexicon || options.phone_lm)
      check(classes == kPhoneClasses, std::string(options.lexicon ? "decoding words" : "a phone language model") +
                                          " needs a model over the " + std::to_string(kPhoneClasses) +
                                          " phone classes, this one has " + std::to_string(classes));
    phones_ = phone_decoder();
    if (options.lexicon && words)
      words_.emplace(words, options.lm, options.words);
    else if (options.lexicon)
      words_.emplace(*options.lexicon, options.lm, options.words);
  }
  // A new utterance (the word search keeps its lexicon trie).
  void reset() {
    phones_ = phone_decoder();
    if (words_) words_->reset();
    words_done_.clear();
    finished_ = false;
  }
  void push(const float* logits_row) {
    phones_->push(logits_row);
    if (words_) words_->push(logits_row);
  }
  void finish() {
    phones_->finish();
    if (words_) {
      std::vector<RecognizedWord> settled = words_->take_settled();
      words_done_.insert(words_done_.end(), settled.begin(), settled.end());
      std::vector<RecognizedWord> rest = words_->finish().words;
      words_done_.insert(words_done_.end(), rest.begin(), rest.end());
      finished_ = true;
    }
  }
  void take_settled(std::vector<CtcToken>& phones, std::vector<RecognizedWord>* words) {
    phones_->take_settled(phones);
    if (!words_ || !words) return;
    if (!finished_) {
      std::vector<RecognizedWord> settled = words_->take_settled();
      words->insert(words->end(), settled.begin(), settled.end());
    }
    words->insert(words->end(), words_done_.begin(), words_done_.end());
    words_done_.clear();
  }
  void prefetch() const {
    phones_->prefetch();
    if (words_) words_->prefetch();
  }
  std::vector<CtcToken> tentative_phones() const { return phones_->tentative(); }
  std::vector<RecognizedWord> tentative_words() const {
    return words_ && !finished_ ? words_->pending() : std::vector<RecognizedWord>{};
  }

 private:
  std::unique_ptr<CtcDecoder> phone_decoder() const {
    return options_.phone_lm ? make_phone_lm_decoder(*options_.phone_lm, options_.phone_search)
                             : make_ctc_decoder(classes_, options_.decoding);
  }
  int64_t classes_;
  RecognizerOptions options_;  // its lexicon and models are the caller's
  std::unique_ptr<CtcDecoder> phones_;
  std::optional<WordSearch> words_;
  std::vector<RecognizedWord> words_done_;  // finish()'s words, until taken
  bool finished_ = false;
};

}  // namespace lt::speech
