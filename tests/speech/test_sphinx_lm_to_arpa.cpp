// scripts/speech/sphinx_lm_to_arpa.py against Debian's CMU Sphinx tools: a
// random ARPA model written as a Sphinx trie by sphinx_lm_convert (which
// writes tries correctly, and only fails to read some back) comes back with
// the same scores for random sentences, read by read_arpa; skipped where
// sphinxbase-utils is not installed.
#include <cmath>

#include "speech/language_model.h"
#include "speech/sphinx_trie.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("sphinx_lm_to_arpa.py gives back the scores of a model written as a Sphinx trie") {
  if (!have_sphinx_lm_convert()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::vector<std::string> vocabulary = {"a", "big", "cat", "dog", "eats", "fish", "goes", "home", "it's", "jam",
                                               "kites", "lemon"};
  write_sphinx_trigram(tmp, rng, vocabulary, 300);
  std::string log;
  REQUIRE_MESSAGE(run_quietly(tmp, "/usr/bin/python3 '" + std::string(LT_SCRIPTS_DIR) + "/speech/sphinx_lm_to_arpa.py' '" +
                                       tmp.file("model.lm.bin") + "' '" + tmp.file("back.arpa.gz") + "'", &log) == 0,
                  log);
  const LanguageModel original = read_arpa(tmp.file("original.arpa")), back = read_arpa(tmp.file("back.arpa.gz"));
  CHECK(back.order() == 3);
  CHECK(back.ngrams(1) == original.ngrams(1));
  // Every n-gram of the original; the trie may add shorter ones on the way to a longer one.
  CHECK(back.ngrams(2) >= original.ngrams(2));
  CHECK(back.ngrams(3) == original.ngrams(3));
  // Fresh sentences, word by word (back-off included), within sphinxbase's own rounding: it keeps
  // each log to about a unit of base 1.0001 (1e-4 nats), and a score adds up to three of them.
  double worst = 0;
  for (int i = 0; i < 200; ++i) {
    LmState a = original.begin(), b = back.begin();
    for (const std::string& w : zipf_sentence(rng, vocabulary)) {
      const double x = original.score(a, original.word_id(w), &a), y = back.score(b, back.word_id(w), &b);
      worst = std::max(worst, std::abs(x - y));
    }
    worst = std::max(worst, std::abs(original.end_score(a) - back.end_score(b)));
  }
  CHECK(worst < 2e-4);
}
