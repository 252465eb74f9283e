// ARPA language models: random models of orders 1 to 4 written plain and
// gzipped, every score against the back-off definition computed over
// strings, states as the longest usable history; one line naming file:line
// for each malformed file.
#include <algorithm>
#include <set>

#include "speech/arpa_reference.h"
#include "speech/language_model.h"

using namespace lt;
using namespace lt::test;

namespace {

std::vector<std::string> random_words(Rng& rng, int64_t count) {
  std::vector<std::string> words;
  while (int64_t(words.size()) < count) {
    std::string w;
    for (int64_t k = rng.integer(1, 6); k > 0; --k) w += char('A' + rng.integer(0, 25));
    if (rng.uniform(0, 1) < 0.2) w += "'S";
    if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  }
  return words;
}

// Compares ln P(v | history) for every word v but <s> with the definition.
void check_every_word(const LanguageModel& lm, const ArpaModel& m, LmState state,
                      const std::vector<std::string>& history) {
  for (const std::string& v : m.vocabulary) {
    if (v == "<s>") continue;
    INFO("history of " << history.size() << " words, word " << v);
    CHECK(std::abs(lm.score(state, lm.word_id(v)) - naive_log_prob(m, usable(m, history), v)) < 1e-9);
  }
  CHECK(lm.end_score(state) == lm.score(state, lm.sentence_end()));
}

}  // namespace

TEST_CASE("read_arpa: random models of orders 1-4, plain and gzip, score every word as the back-off definition") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  for (int order = 1; order <= 4; ++order) {
    for (bool gzip : {false, true}) {
      INFO("order " << order << (gzip ? " gzip" : " plain"));
      const ArpaModel m = random_arpa(rng, order, random_words(rng, rng.integer(4, 12)), rng.uniform(0, 1) < 0.5);
      const std::string path = tmp.file(gzip ? "lm.arpa.gz" : "lm.arpa");
      write_text_file(path, arpa_text(m, rng), gzip);
      const LanguageModel lm = read_arpa(path);
      REQUIRE(lm.order() == order);
      CHECK(lm.words().size() == m.vocabulary.size());
      for (int n = 1; n <= order; ++n) {
        int64_t count = 0;
        for (const auto& [g, e] : m.ngrams) count += int64_t(g.size()) == n;
        CHECK(lm.ngrams(n) == count);
      }
      CHECK((lm.unknown() >= 0) == (std::find(m.vocabulary.begin(), m.vocabulary.end(), "<unk>") != m.vocabulary.end()));
      auto ids = [&](const std::vector<std::string>& words) {
        std::vector<int32_t> out;
        for (const std::string& w : words) out.push_back(lm.word_id(w));
        return out;
      };
      // Every n-gram and its context as a history, some behind an extra word.
      for (const auto& [g, e] : m.ngrams) {
        for (size_t drop : {size_t(0), size_t(1)}) {
          std::vector<std::string> h(g.begin(), g.end() - std::ptrdiff_t(drop));
          if (!h.empty() && h.back() == "</s>") continue;
          if (rng.uniform(0, 1) < 0.5 && (h.empty() || h.front() != "<s>")) h.insert(h.begin(), m.vocabulary[0]);
          check_every_word(lm, m, lm.state_of(ids(h)), h);
        }
      }
      // Sentences word by word: the state after each word is the state of
      // its history, a suffix of at most order - 1 words of it.
      for (int sentence = 0; sentence < 10; ++sentence) {
        std::vector<std::string> h = {"<s>"};
        LmState state = lm.begin();
        CHECK(state == lm.state_of(ids(h)));
        for (int k = 0; k < 12; ++k) {
          check_every_word(lm, m, state, h);
          std::string next;
          do {  // mostly a word that continues an n-gram of the model
            next = m.vocabulary[size_t(rng.integer(0, int64_t(m.vocabulary.size()) - 1))];
            std::vector<std::string> g = usable(m, h);
            g.push_back(next);
            while (g.size() > 1 && !m.ngrams.count(g)) g.erase(g.begin());
            if (g.size() > 1 || rng.uniform(0, 1) < 0.3) break;
          } while (true);
          if (next == "<s>" || next == "</s>") continue;
          LmState after;
          const double lp = lm.score(state, lm.word_id(next), &after);
          CHECK(std::abs(lp - naive_log_prob(m, usable(m, h), next)) < 1e-9);
          h.push_back(next);
          state = after;
          CHECK(state == lm.state_of(ids(h)));
          const std::vector<int32_t> kept = lm.history(state), whole = ids(h);
          REQUIRE(kept.size() <= size_t(std::max(order - 1, 0)));
          CHECK(std::equal(kept.begin(), kept.end(), whole.end() - std::ptrdiff_t(kept.size())));
        }
      }
    }
  }
}

TEST_CASE("read_arpa: a model of thousands of n-grams, whose table grows while it is read, scores as the definition") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const ArpaModel m = random_arpa(rng, 3, random_words(rng, 60), true, 4000);
  REQUIRE(m.ngrams.size() > 5000);
  const std::string path = tmp.file("big.arpa");
  write_text_file(path, arpa_text(m, rng), false);
  const LanguageModel lm = read_arpa(path);
  int64_t count = 0;
  for (int n = 1; n <= 3; ++n) count += lm.ngrams(n);
  CHECK(count == int64_t(m.ngrams.size()));
  // Each n-gram's word after its context, and after the context behind another word.
  for (const auto& [g, e] : m.ngrams) {
    if (g.size() < 2 || g.front() == "<s>") continue;
    const std::vector<std::string> context(g.begin(), g.end() - 1);
    for (const std::vector<std::string>& h : {context, std::vector<std::string>{m.vocabulary[0], context.back()}}) {
      std::vector<int32_t> ids;
      for (const std::string& w : h) ids.push_back(lm.word_id(w));
      INFO(g.size() << "-gram ending in " << g.back());
      CHECK(std::abs(lm.score(lm.state_of(ids), lm.word_id(g.back())) - naive_log_prob(m, usable(m, h), g.back())) <
            1e-9);
    }
  }
}

TEST_CASE("read_arpa: words in any case, <unk> absent, an n-gram whose context is missing") {
  TempDir tmp;
  const std::string path = tmp.file("small.arpa");
  write_text_file(path,
                  "\\data\\\nngram 1 = 4\nngram 2=1\nngram 3=1\n\n\\1-grams:\n-99 <S> -0.5\n-0.5 </s>\n-0.3 hello -0.2\n"
                  "-0.9 World\n\n\\2-grams:\n-0.1 <s> HELLO -0.4\n\n\\3-grams:\n-0.05 hello world </s>\n\\end\\\n",
                  false);
  const LanguageModel lm = read_arpa(path);
  const double ln10 = std::log(10.0);
  CHECK(lm.unknown() == -1);
  CHECK(lm.word_id("world") == lm.word_id("WORLD"));
  CHECK(lm.words()[size_t(lm.word_id("hello"))] == "HELLO");
  CHECK(lm.word_id("<s>") == lm.sentence_start());
  CHECK(lm.word_id("nobody") == -1);
  LmState s = lm.begin(), t;
  CHECK(std::abs(lm.score(s, lm.word_id("HELLO"), &t) - -0.1 * ln10) < 1e-12);
  // "HELLO WORLD" is no bigram but the context of a trigram: the state keeps it.
  CHECK(std::abs(lm.score(t, lm.word_id("WORLD"), &t) - (-0.4 - 0.2 - 0.9) * ln10) < 1e-12);
  CHECK(lm.history(t) == std::vector<int32_t>{lm.word_id("HELLO"), lm.word_id("WORLD")});
  CHECK(std::abs(lm.end_score(t) - -0.05 * ln10) < 1e-12);
}

TEST_CASE("read_arpa: a malformed file is one error naming file:line") {
  TempDir tmp;
  const std::string head = "\\data\\\nngram 1=3\nngram 2=1\n\n\\1-grams:\n-99 <s> -0.3\n-0.5 </s>\n-0.4 A -0.1\n";
  const std::string bigrams = "\n\\2-grams:\n-0.2 <s> A\n";
  struct Case {
    std::string name, text, want;
  };
  const std::vector<Case> cases = {
      {"no data", "hello\n", ": no \\data\\ line"},
      {"order skipped", "\\data\\\nngram 1=3\nngram 3=1\n", ":3: expected 'ngram 2=COUNT'"},
      {"count", "\\data\\\nngram 1=x\n", ":2: the count in 'ngram 1=x' is not a whole number"},
      {"few entries", "\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n-99 <s> -0.3\n-0.5 </s>\n-0.4 A -0.1\n" + bigrams +
                          "\\end\\\n",
       ":5: the 1-grams section has 3 entries, the \\data\\ header says 4"},
      {"number", head + "\n\\2-grams:\n-0.1x <s> A\n\\end\\\n", ":11: '-0.1x' is not a finite number"},
      {"positive", head + "\n\\2-grams:\n0.2 <s> A\n\\end\\\n", ":11: log10 probability 0.2 is above 0"},
      {"huge", head + "\n\\2-grams:\n-1.21e308 <s> A\n\\end\\\n", ":11: '-1.21e308' is beyond the +/-1e12 a log10 value may take"},
      {"huge back-off", "\\data\\\nngram 1=2\nngram 2=1\n\\1-grams:\n-1 <s> 2e12\n-1 </s>\n", ":5: '2e12' is beyond the +/-1e12 a log10 value may take"},
      {"nan", head + "\n\\2-grams:\nnan <s> A\n\\end\\\n", ":11: 'nan' is not a finite number"},
      {"wrong order", head + "\n\\2-grams:\n-0.2 <s> A </s>\n\\end\\\n", ":11: a 2-gram line is a log10 probability, 2 word(s); this one has 4 fields"},
      {"unknown word", head + "\n\\2-grams:\n-0.2 <s> B\n\\end\\\n", ":11: 'B' is not among the 1-grams"},
      {"repeat", head + "\n\\2-grams:\n-0.2 <s> A\n-0.3 <s> A\n\\end\\\n", ":12: this 2-gram repeats an earlier one"},
      {"no end", head + bigrams, ": the file ends in the 2-grams, without \\end\\"},
      {"section", head + "\n\\3-grams:\n-0.2 <s> A\n\\end\\\n", ":10: expected \\2-grams:, found '\\3-grams:'"},
      {"no </s>", "\\data\\\nngram 1=1\n\\1-grams:\n-1 <s>\n\\end\\\n", ": the 1-grams lack </s>"},
      {"huge claim", "\\data\\\nngram 1=99999999999999\n\\1-grams:\n-1 <s>\n-1 </s>\n\\end\\\n",
       ":3: the 1-grams section has 2 entries, the \\data\\ header says 99999999999999"},
  };
  for (const auto& [name, text, want] : cases) {
    INFO(name);
    const std::string path = tmp.file("bad.arpa");
    write_text_file(path, text, false);
    const std::string message = error_of([&] { read_arpa(path); });
    INFO(message);
    CHECK(message.rfind(path, 0) == 0);
    CHECK(message.find(want) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  // A gzip file cut short.
  const std::string gz = tmp.file("cut.arpa.gz");
  write_text_file(gz, head + bigrams + "\\end\\\n", true);
  std::vector<uint8_t> bytes = read_bytes(gz);
  bytes.resize(bytes.size() / 2);
  write_bytes(gz, bytes);
  CHECK(error_of([&] { read_arpa(gz); }).rfind(gz + ": corrupt gzip data", 0) == 0);
}

TEST_CASE("the shipped word model reads as a trigram over common words whose distributions sum to 1") {
  const LanguageModel lm = read_arpa(std::string(LT_WEIGHTS_DIR) + "/speech-words.arpa.gz");
  CHECK(lm.order() == 3);
  CHECK(lm.ngrams(1) == 40002);
  CHECK(lm.ngrams(2) == 434028);
  CHECK(lm.ngrams(3) == 290053);
  CHECK(lm.unknown() < 0);  // the word search tries its words only
  for (const char* word : {"THE", "OF", "PLEASE", "NUMBER", "WEATHER"}) REQUIRE(lm.word_id(word) >= 0);
  const int32_t the = lm.word_id("THE"), of = lm.word_id("OF"), please = lm.word_id("PLEASE");
  for (const LmState state : {lm.begin(), lm.empty_history(), lm.state_of({the}), lm.state_of({of, the}),
                              lm.state_of({lm.sentence_start(), please}), lm.state_of({please, the})}) {
    double sum = 0;
    for (int32_t w = 0; w < int32_t(lm.words().size()); ++w)
      if (w != lm.sentence_start()) sum += std::exp(lm.score(state, w));
    CHECK(std::abs(sum - 1) < 1e-5);
  }
}

TEST_CASE("phrase_model: each phrase equally likely, word by word, and any other sequence all but impossible") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::vector<std::string> words = {"GO", "STOP", "LEFT", "RIGHT", "UP", "DOWN", "NOW"};
  for (int trial = 0; trial < 20; ++trial) {
    std::set<std::vector<std::string>> unique;
    std::vector<std::vector<std::string>> phrases;
    for (int64_t n = rng.integer(1, 12); n > 0; --n) {
      std::vector<std::string> p;
      for (int64_t k = rng.integer(1, 5); k > 0; --k) p.push_back(words[size_t(rng.integer(0, 6))]);
      phrases.push_back(p);
      unique.insert(p);
      if (rng.uniform(0, 1) < 0.2) phrases.push_back(p);  // a repeat counts once
    }
    const LanguageModel lm = phrase_model(phrases, "test");
    // A phrase's score is ln(1 / phrases); a prefix's words each the share of phrases going on with them.
    for (const std::vector<std::string>& p : unique) {
      LmState s = lm.begin();
      double total = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        std::vector<std::string> prefix(p.begin(), p.begin() + std::ptrdiff_t(i));
        int begin = 0, on = 0;
        for (const auto& q : unique) {
          if (q.size() < i || !std::equal(prefix.begin(), prefix.end(), q.begin())) continue;
          ++begin;
          on += q.size() > i && q[i] == p[i];
        }
        const double lp = lm.score(s, lm.word_id(p[i]), &s);
        CHECK(lp == doctest::Approx(std::log(double(on) / begin)).epsilon(1e-7));
        total += lp;
      }
      total += lm.end_score(s);
      CHECK(total == doctest::Approx(-std::log(double(unique.size()))).epsilon(1e-7));
    }
    // Random word sequences that are no phrase score below -1e9.
    for (int k = 0; k < 50; ++k) {
      std::vector<std::string> q;
      for (int64_t n = rng.integer(1, 6); n > 0; --n) q.push_back(words[size_t(rng.integer(0, 6))]);
      if (unique.count(q)) continue;
      LmState s = lm.begin();
      double total = 0;
      for (const std::string& w : q) total += lm.word_id(w) < 0 ? -1e9 : lm.score(s, lm.word_id(w), &s);
      CHECK(total + lm.end_score(s) <= -1e9);
    }
  }
  CHECK(error_of([] { phrase_model({}, "g.txt"); }) == "g.txt: no phrases");
  CHECK(error_of([] { phrase_model({{"<s>"}}, "g.txt"); }).find("'<s>' cannot be a word") != std::string::npos);
  CHECK(error_of([] { phrase_model({std::vector<std::string>(31, "GO")}, "g.txt"); }).find("1 to 30 words") !=
        std::string::npos);
}
