// make_phone_lm_decoder: the word search with the phones as its words, behind
// the CtcDecoder interface, so the recognizer and the stream decode phones
// with a phone n-gram model exactly as they do without one.
#include "speech/word_search.h"

namespace lt {
namespace {

Lexicon phone_lexicon() {
  Lexicon lexicon;
  lexicon.name = "the 39 phones";
  for (int32_t id = 1; id < kPhoneClasses; ++id) lexicon.words[phone_names()[size_t(id)]] = {id};
  return lexicon;
}

void append_tokens(const std::vector<RecognizedWord>& phones, std::vector<CtcToken>& out) {
  for (const RecognizedWord& p : phones) out.push_back({p.phones.front(), p.first_frame, p.last_frame});
}

class PhoneLmDecoder final : public CtcDecoder {
 public:
  PhoneLmDecoder(const LanguageModel& lm, const WordSearchOptions& options) : search_(phone_lexicon(), &lm, options) {}
  void push(const float* logits_row) override { search_.push(logits_row); }
  void take_settled(std::vector<CtcToken>& out) override {
    if (!finished_) return append_tokens(search_.take_settled(), out);
    out.insert(out.end(), rest_.begin(), rest_.end());
    rest_.clear();
  }
  void finish() override {
    append_tokens(search_.take_settled(), rest_);
    append_tokens(search_.finish().words, rest_);
    finished_ = true;
  }
  void prefetch() const override { search_.prefetch(); }
  std::vector<CtcToken> tentative() const override {
    std::vector<CtcToken> out;
    if (!finished_) append_tokens(search_.pending(), out);
    return out;
  }

 private:
  WordSearch search_;
  std::vector<CtcToken> rest_;  // finish()'s tokens, until taken
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<CtcDecoder> make_phone_lm_decoder(const LanguageModel& lm, const WordSearchOptions& options) {
  return std::make_unique<PhoneLmDecoder>(lm, options);
}

}  // namespace lt
