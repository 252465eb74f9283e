// read_arpa on arbitrary bytes, plain or gzip (byte 0 odd: the rest gzipped
// by the harness at a level the byte picks, so mutations reach the text
// behind the compression; even: the rest as is, which may itself be a gzip
// stream). A model that reads is then scored from every state a sentence of
// its first words reaches, and drives a word search over a lexicon of its
// first words, on logits taken from the input bytes.
#include <cmath>
#include <cstdio>

#include "fuzz_util.h"
#include "speech/language_model.h"
#include "speech/word_search.h"

namespace {

void exercise(const lt::LanguageModel& lm, const uint8_t* data, size_t size) {
  const int32_t words = int32_t(std::min<size_t>(lm.words().size(), 64));
  lt::LmState state = lm.begin();
  for (int32_t w = 0; w < words; ++w) {
    lt::LmState next;
    const double lp = lm.score(state, w, &next) + lm.end_score(next);
    if (std::isnan(lp) || lm.history(next).size() >= size_t(lm.order())) {
      std::fprintf(stderr, "harness: bad score or state after word %d\n", w);
      std::abort();
    }
    state = next;
  }
  lt::Lexicon lexicon;
  for (int32_t w = 0; w < words && lexicon.words.size() < 6; ++w) {
    if (w == lm.sentence_start() || w == lm.sentence_end() || w == lm.unknown()) continue;
    std::vector<int32_t> phones;
    for (size_t i = 0; i < lm.words()[size_t(w)].size() && i < 3; ++i)
      phones.push_back(1 + int32_t(uint8_t(lm.words()[size_t(w)][i]) % (lt::kPhoneClasses - 1)));
    lexicon.words[lm.words()[size_t(w)]] = phones;
  }
  if (lexicon.words.empty()) return;
  lt::WordSearchOptions options;
  options.beam = 4;
  options.max_delay = 2;
  lt::WordSearch search(lexicon, &lm, options);
  std::vector<float> row(lt::kPhoneClasses);
  for (size_t t = 0; t < 16; ++t) {
    for (size_t c = 0; c < row.size(); ++c) row[c] = float(data[(t * row.size() + c) % size]) / 16.0f;
    search.push(row.data());
    search.take_settled();
  }
  search.finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = lt::fuzz::scratch_dir() + "/words.arpa";
  if (data[0] & 1) {
    const std::vector<uint8_t> packed = lt::fuzz::gzip(data + 1, size - 1, (data[0] >> 1) % 10);
    lt::fuzz::write_file(path, packed.data(), packed.size());
  } else {
    lt::fuzz::write_file(path, data + 1, size - 1);
  }
  lt::LanguageModel lm;
  bool read = false;
  lt::fuzz::expect_lt_error_only(path, [&] {
    lm = lt::read_arpa(path);
    read = true;
  });
  if (read) exercise(lm, data, size);
  return 0;
}
