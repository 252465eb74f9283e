// scripts/speech/general_lm.py on a random trigram written as a Sphinx trie
// by Debian's sphinx_lm_convert: restricted to a vocabulary, the model read
// back by read_arpa is the original conditioned on the next word being in the
// vocabulary, history by history; pruned, it keeps fewer n-grams and every
// distribution still sums to 1. Skipped where sphinxbase-utils is not
// installed.
#include <cmath>

#include "speech/language_model.h"
#include "speech/sphinx_trie.h"

using namespace lt;
using namespace lt::test;

namespace {
// ln P(w | history) of every word of `words` and </s>.
std::vector<double> distribution(const LanguageModel& lm, const std::vector<std::string>& history,
                                 const std::vector<std::string>& words) {
  std::vector<int32_t> ids;
  for (const std::string& h : history) ids.push_back(h == "<s>" ? lm.sentence_start() : lm.word_id(h));
  const LmState state = history.empty() ? lm.empty_history() : lm.state_of(ids);
  std::vector<double> out;
  for (const std::string& w : words) out.push_back(lm.score(state, lm.word_id(w)));
  out.push_back(lm.score(state, lm.sentence_end()));
  return out;
}
}  // namespace

TEST_CASE("general_lm.py: a restricted trigram is the original conditioned on its vocabulary, and pruned it sums to 1") {
  if (!have_sphinx_lm_convert()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::vector<std::string> all = {"a",    "big",   "cat",  "dog",  "eats", "fish", "goes", "home",
                                        "it's", "jam",   "kite", "lamp", "moon", "nest", "owl",  "pear"};
  write_sphinx_trigram(tmp, rng, all, 400);
  // The dictionary pronounces all but two words; --words keeps the 11 likeliest of those.
  std::string dict;
  for (size_t i = 0; i < all.size(); ++i)
    if (i != 3 && i != 9) dict += all[i] + " AH\n";
  write_text_file(tmp.file("words.dict"), dict, false);
  std::string log;
  const std::string scripts = std::string(LT_SCRIPTS_DIR) + "/speech/";
  auto general = [&](const std::string& prune, const std::string& out) {
    REQUIRE_MESSAGE(run_quietly(tmp, "/usr/bin/python3 '" + scripts + "general_lm.py' --model '" + tmp.file("model.lm.bin") +
                                 "' --dictionary '" + tmp.file("words.dict") + "' --words 11 --prune " + prune +
                                 " -o '" + tmp.file(out) + "'", &log) == 0, log);
    return read_arpa(tmp.file(out));
  };
  const LanguageModel original = read_arpa(tmp.file("original.arpa"));
  const LanguageModel restricted = general("0", "restricted.arpa.gz");
  CHECK(restricted.order() == 3);
  CHECK(restricted.unknown() < 0);
  CHECK(restricted.words().size() == 13);  // 11 words, <s> and </s>
  std::vector<std::string> kept;
  for (const std::string& w : all) {
    const bool in = restricted.word_id(w) >= 0;
    if (w == "dog" || w == "jam") CHECK(!in);
    if (in) kept.push_back(w);
  }
  REQUIRE(kept.size() == 11);
  // The likeliest 11 of the pronounced words: none left out is likelier than one kept.
  double least_kept = 0, most_dropped = -1e30;
  for (const std::string& w : all) {
    if (w == "dog" || w == "jam") continue;
    const double p = original.score(original.empty_history(), original.word_id(w));
    if (restricted.word_id(w) >= 0)
      least_kept = std::min(least_kept, p);
    else
      most_dropped = std::max(most_dropped, p);
  }
  CHECK(most_dropped <= least_kept + 1e-3);
  // Every history of kept words, and <s>: P'(w | h) = P(w | h) / sum over the vocabulary of P(v | h),
  // within the Sphinx file's rounding (about 1e-4 nats a log).
  std::vector<std::vector<std::string>> histories = {{}, {"<s>"}};
  for (const std::string& u : kept) {
    histories.push_back({u});
    histories.push_back({"<s>", u});
    for (const std::string& v : kept) histories.push_back({u, v});
  }
  double worst = 0;
  for (const auto& h : histories) {
    const std::vector<double> p = distribution(original, h, kept), q = distribution(restricted, h, kept);
    double z = 0;
    for (double x : p) z += std::exp(x);
    for (size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::abs(q[i] - (p[i] - std::log(z))));
  }
  CHECK(worst < 1e-3);
  // Pruned: fewer n-grams, and each history's distribution over the vocabulary still sums to 1.
  const LanguageModel pruned = general("1e-3", "pruned.arpa.gz");
  CHECK(pruned.ngrams(2) + pruned.ngrams(3) < restricted.ngrams(2) + restricted.ngrams(3));
  CHECK(pruned.ngrams(3) > 0);
  double sum_error = 0;
  for (const auto& h : histories) {
    double sum = 0;
    for (double x : distribution(pruned, h, kept)) sum += std::exp(x);
    sum_error = std::max(sum_error, std::abs(sum - 1));
  }
  CHECK(sum_error < 1e-5);
}
