// scripts/speech/make_lm.py, run on random transcripts and read back with
// read_arpa: every history's distribution over the vocabulary, </s> and
// <unk> sums to 1; a manifest's words column gives the same file as the
// text; the vocabulary options send other words to <unk>.
#include <cstdlib>
#include <map>
#include <set>

#include "speech/arpa_reference.h"
#include "speech/language_model.h"

using namespace lt;
using namespace lt::test;

namespace {

// Runs make_lm.py; returns its exit status, its stderr in *log.
int make_lm(const TempDir& tmp, const std::string& arguments, std::string* log) {
  const std::string err = tmp.file("make_lm.err");
  const std::string command =
      "python3 '" + std::string(LT_SCRIPTS_DIR) + "/speech/make_lm.py' " + arguments + " 2>'" + err + "'";
  const int status = std::system(command.c_str());
  *log = read_text(err);
  return status;
}

// Σ exp(score) over every word but <s>, for each history: the model's
// states after <s> and each prefix of each sentence, and the empty history.
void check_distributions(const LanguageModel& lm, const std::vector<std::vector<std::string>>& sentences) {
  std::set<int32_t> contexts = {lm.empty_history().context, lm.begin().context};
  for (const auto& s : sentences) {
    LmState state = lm.begin();
    for (const std::string& w : s) {
      const int32_t id = lm.word_id(w) >= 0 ? lm.word_id(w) : lm.unknown();
      REQUIRE(id >= 0);
      lm.score(state, id, &state);
      contexts.insert(state.context);
    }
  }
  for (int32_t c : contexts) {
    double sum = 0;
    for (int32_t w = 0; w < int32_t(lm.words().size()); ++w)
      if (w != lm.sentence_start()) sum += std::exp(lm.score(LmState{c}, w));
    INFO("history of " << lm.history(LmState{c}).size() << " words");
    CHECK(std::abs(sum - 1) < 1e-6);
  }
  CHECK(contexts.size() > (lm.order() > 1 ? 3u : 0u));  // the sentences reach several histories
}

}  // namespace

TEST_CASE("make_lm.py: every conditional distribution sums to 1, from text or a manifest, at orders 1-3") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::vector<std::string> vocabulary = {"A", "BIG", "CAT", "DOG", "EATS", "FISH", "GOES", "HOME", "IT'S", "JAM"};
  std::vector<std::vector<std::string>> sentences;
  std::string text, manifest = "path\twords\tspeaker\n";
  for (int i = 0; i < 60; ++i) {
    std::vector<std::string> s;
    std::string line;
    // Zipf-like: early words much more often, so counts of 1 and 2 both occur.
    for (int64_t k = rng.integer(1, 8); k > 0; --k) {
      const size_t w = size_t(std::min<double>(double(vocabulary.size()) - 1, std::floor(std::exp(rng.uniform(0, 2.4)) - 1)));
      s.push_back(vocabulary[w]);
      std::string written = vocabulary[w];
      if (rng.uniform(0, 1) < 0.3) written[0] = char(std::tolower(static_cast<unsigned char>(written[0])));
      line += (line.empty() ? "" : " ") + written;
    }
    sentences.push_back(s);
    text += line + "\n";
    manifest += "a" + std::to_string(i) + ".flac\t" + line + "\tv\n";
  }
  write_text_file(tmp.file("text.txt"), text, false);
  write_text_file(tmp.file("train.tsv"), manifest, false);
  std::string log;
  for (int order = 1; order <= 3; ++order) {
    for (int prune : {1, 2}) {
      INFO("order " << order << " prune " << prune);
      const std::string options = " --order " + std::to_string(order) + " --prune " + std::to_string(prune);
      REQUIRE(make_lm(tmp, "'" + tmp.file("text.txt") + "' -o '" + tmp.file("text.arpa") + "'" + options, &log) == 0);
      INFO(log);
      REQUIRE(make_lm(tmp, "'" + tmp.file("train.tsv") + "' -o '" + tmp.file("tsv.arpa.gz") + "'" + options, &log) == 0);
      const LanguageModel lm = read_arpa(tmp.file("text.arpa"));
      CHECK(lm.order() == order);
      CHECK(lm.unknown() >= 0);
      check_distributions(lm, sentences);
      // The manifest's words column, gzipped: the same model.
      const LanguageModel same = read_arpa(tmp.file("tsv.arpa.gz"));
      for (int n = 1; n <= order; ++n) CHECK(same.ngrams(n) == lm.ngrams(n));
      LmState a = lm.begin(), b = same.begin();
      for (const std::string& w : sentences[0]) CHECK(lm.score(a, lm.word_id(w), &a) == same.score(b, same.word_id(w), &b));
      if (prune == 2 && order > 1) {  // some n-gram seen once is left to back-off
        REQUIRE(make_lm(tmp, "'" + tmp.file("text.txt") + "' -o '" + tmp.file("all.arpa") + "' --order " +
                                 std::to_string(order), &log) == 0);
        CHECK(read_arpa(tmp.file("all.arpa")).ngrams(order) > lm.ngrams(order));
      }
    }
  }
  // Vocabulary options: words outside the lexicon or seen too rarely are <unk>.
  write_text_file(tmp.file("lex.dict"), ";;; a few\nA AH0\ncat K AE1 T\ncat(2) K AA1 T\nDOG D AO1 G\nJAM JH AE1 M\n", false);
  REQUIRE(make_lm(tmp, "'" + tmp.file("text.txt") + "' -o '" + tmp.file("lex.arpa") + "' --lexicon '" +
                           tmp.file("lex.dict") + "' --min-count 2 --eval '" + tmp.file("text.txt") + "'",
                  &log) == 0);
  INFO(log);
  const LanguageModel lex_lm = read_arpa(tmp.file("lex.arpa"));
  // --eval's perplexity is the one the file gives through read_arpa.
  double log_sum = 0;
  int64_t tokens = 0;
  for (const auto& s : sentences) {
    LmState state = lex_lm.begin();
    for (const std::string& w : s) {
      const int32_t id = lex_lm.word_id(w);
      log_sum += lex_lm.score(state, id >= 0 ? id : lex_lm.unknown(), &state);
      ++tokens;
    }
    log_sum += lex_lm.end_score(state);
    ++tokens;
  }
  const size_t at = log.find("perplexity ");
  REQUIRE(at != std::string::npos);
  CHECK(std::abs(std::stod(log.substr(at + 11)) - std::exp(-log_sum / double(tokens))) < 0.006);
  std::map<std::string, int> seen;
  for (const auto& s : sentences)
    for (const std::string& w : s) ++seen[w];
  for (const std::string& w : vocabulary) {
    const bool in = (w == "A" || w == "CAT" || w == "DOG" || w == "JAM") && seen[w] >= 2;
    CHECK((lex_lm.word_id(w) >= 0) == in);
  }
  check_distributions(lex_lm, sentences);
  // Deterministic: the same inputs give the same bytes.
  REQUIRE(make_lm(tmp, "'" + tmp.file("train.tsv") + "' -o '" + tmp.file("again.arpa.gz") + "' --order 3", &log) == 0);
  REQUIRE(make_lm(tmp, "'" + tmp.file("train.tsv") + "' -o '" + tmp.file("tsv.arpa.gz") + "' --order 3", &log) == 0);
  CHECK(read_bytes(tmp.file("again.arpa.gz")) == read_bytes(tmp.file("tsv.arpa.gz")));
  // A manifest without words is an error naming it.
  write_text_file(tmp.file("bad.tsv"), "path\tphones\na.flac\tAH\n", false);
  CHECK(make_lm(tmp, "'" + tmp.file("bad.tsv") + "' -o '" + tmp.file("bad.arpa") + "'", &log) != 0);
  CHECK(log.find("bad.tsv:1: no 'words' column") != std::string::npos);
}
