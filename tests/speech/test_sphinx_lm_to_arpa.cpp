// scripts/speech/sphinx_lm_to_arpa.py against Debian's CMU Sphinx tools: a
// random ARPA model written as a Sphinx trie by sphinx_lm_convert (which
// writes tries correctly, and only fails to read some back) comes back with
// the same scores for random sentences, read by read_arpa; skipped where
// sphinxbase-utils is not installed.
#include <cmath>
#include <cstdlib>

#include "lt/language_model.h"
#include "speech/arpa_reference.h"

using namespace lt;
using namespace lt::test;

namespace {
int run(const TempDir& tmp, const std::string& command, std::string* log) {
  const std::string err = tmp.file("run.err");
  const int status = std::system((command + " >/dev/null 2>'" + err + "'").c_str());
  *log = read_text(err);
  return status;
}
}  // namespace

TEST_CASE("sphinx_lm_to_arpa.py gives back the scores of a model written as a Sphinx trie") {
  if (std::system("command -v sphinx_lm_convert >/dev/null 2>&1") != 0) {
    std::printf("LT-SKIP: sphinx_lm_convert (sphinxbase-utils) is not installed\n");
    return;
  }
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::vector<std::string> vocabulary = {"a", "big", "cat", "dog", "eats", "fish", "goes", "home", "it's", "jam",
                                               "kites", "lemon"};
  auto sentence = [&] {
    std::vector<std::string> s;
    for (int64_t k = rng.integer(1, 9); k > 0; --k)
      s.push_back(vocabulary[size_t(std::min<double>(double(vocabulary.size()) - 1,
                                                     std::floor(std::exp(rng.uniform(0, 2.6)) - 1)))]);
    return s;
  };
  std::string text;
  for (int i = 0; i < 300; ++i) {
    std::string line;
    for (const std::string& w : sentence()) line += (line.empty() ? "" : " ") + w;
    text += line + "\n";
  }
  write_text_file(tmp.file("text.txt"), text, false);
  std::string log;
  const std::string scripts = std::string(LT_SCRIPTS_DIR) + "/speech/";
  REQUIRE(run(tmp, "python3 '" + scripts + "make_lm.py' '" + tmp.file("text.txt") + "' --order 3 -o '" +
                       tmp.file("original.arpa") + "'", &log) == 0);
  REQUIRE_MESSAGE(run(tmp, "sphinx_lm_convert -i '" + tmp.file("original.arpa") + "' -o '" + tmp.file("model.lm.bin") + "'",
                      &log) == 0, log);
  REQUIRE_MESSAGE(run(tmp, "/usr/bin/python3 '" + scripts + "sphinx_lm_to_arpa.py' '" + tmp.file("model.lm.bin") + "' '" +
                               tmp.file("back.arpa.gz") + "'", &log) == 0, log);
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
    for (const std::string& w : sentence()) {
      const double x = original.score(a, original.word_id(w), &a), y = back.score(b, back.word_id(w), &b);
      worst = std::max(worst, std::abs(x - y));
    }
    worst = std::max(worst, std::abs(original.end_score(a) - back.end_score(b)));
  }
  CHECK(worst < 2e-4);
}
