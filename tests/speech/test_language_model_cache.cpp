// load_language_model's binary copy: a model read back from its copy scores
// every word after every history as the back-off definition does, a copy
// that is cut short, altered or stale is never trusted into a crash or a
// wrong model, and a cache folder that cannot be written costs nothing but
// the parse.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "speech/arpa_reference.h"
#include "speech/language_model.h"

using namespace lt;
using namespace lt::test;

namespace {

// LT_CACHE_DIR set for one test, then restored.
struct CacheFolder {
  explicit CacheFolder(const std::string& path) {
    if (const char* old = std::getenv("LT_CACHE_DIR")) old_ = old, had_ = true;
    setenv("LT_CACHE_DIR", path.c_str(), 1);
  }
  ~CacheFolder() { had_ ? setenv("LT_CACHE_DIR", old_.c_str(), 1) : unsetenv("LT_CACHE_DIR"); }
  std::string old_;
  bool had_ = false;
};

std::vector<std::string> copies(const std::string& folder) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(folder)) found.push_back(e.path().string());
  return found;
}

ArpaModel model(Rng& rng) {
  std::vector<std::string> words;
  for (int i = 0; i < 12; ++i) words.push_back("W" + std::to_string(rng.integer(0, 999)) + "X" + std::to_string(i));
  return random_arpa(rng, int(rng.integer(1, 4)), words, rng.uniform(0, 1) < 0.5, rng.integer(20, 120));
}

// Every word after every n-gram's context (and the start): the score as the
// definition gives it, and the state after it, the longest usable history
// the model knows. With `same`, both exactly as that model's.
void check_model(const LanguageModel& lm, const ArpaModel& m, const LanguageModel* same = nullptr) {
  REQUIRE(lm.order() == m.order);
  REQUIRE(lm.words().size() == m.vocabulary.size());
  auto ids = [&](const std::vector<std::string>& words) {
    std::vector<int32_t> out;
    for (const std::string& w : words) out.push_back(lm.word_id(w));
    return out;
  };
  std::vector<std::vector<std::string>> histories{{}, {"<s>"}};
  for (const auto& kv : m.ngrams)
    if (kv.first.size() > 1) histories.emplace_back(kv.first.begin(), kv.first.end() - 1);
  for (const std::vector<std::string>& h : histories) {
    const LmState state = lm.state_of(ids(h));
    for (const std::string& v : m.vocabulary) {
      if (v == "<s>") continue;
      LmState next;
      const double score = lm.score(state, lm.word_id(v), &next);
      CHECK(std::abs(score - naive_log_prob(m, usable(m, h), v)) < 1e-9);
      std::vector<std::string> after = h;
      after.push_back(v);
      CHECK(next == lm.state_of(ids(after)));
      const std::vector<int32_t> kept = lm.history(next), whole = ids(usable(m, after));
      REQUIRE(kept.size() <= whole.size());
      CHECK(std::equal(kept.begin(), kept.end(), whole.end() - std::ptrdiff_t(kept.size())));
      if (!same) continue;
      LmState same_next;
      CHECK(same->score(same->state_of(ids(h)), lm.word_id(v), &same_next) == score);
      CHECK(same->history(same_next) == kept);
    }
  }
}

}  // namespace

TEST_CASE("load_language_model: the copy written on the first load gives the same model on the next") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const CacheFolder cache(tmp.file("cache/lt"));  // made by the first load
  for (int round = 0; round < 3; ++round) {
    const ArpaModel m = model(rng);
    const std::string path = tmp.file("lm" + std::to_string(round) + ".arpa");
    write_text_file(path, arpa_text(m, rng), rng.uniform(0, 1) < 0.5);
    const LanguageModel parsed = load_language_model(path);
    REQUIRE(copies(tmp.file("cache/lt")).size() == size_t(round + 1));
    const LanguageModel copied = load_language_model(path);
    check_model(parsed, m);
    check_model(copied, m, &parsed);
    for (int n = 1; n <= m.order; ++n) CHECK(copied.ngrams(n) == parsed.ngrams(n));
    CHECK(copied.unknown() == parsed.unknown());
    CHECK(copied.begin() == parsed.begin());
  }
}

TEST_CASE("load_language_model: a copy cut short or altered never crashes, a stale one is never used") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const CacheFolder cache(tmp.str() + "/cache");
  const ArpaModel m = model(rng);
  const std::string path = tmp.file("lm.arpa");
  write_text_file(path, arpa_text(m, rng), false);
  load_language_model(path);
  const std::vector<std::string> found = copies(tmp.str() + "/cache");
  REQUIRE(found.size() == 1);
  const std::vector<uint8_t> good = read_bytes(found[0]);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<uint8_t> bad = good;
    if (trial % 2 == 0) {
      bad.resize(size_t(rng.integer(0, int64_t(good.size()) - 1)));  // cut: the model comes from the text
      write_bytes(found[0], bad);
      check_model(load_language_model(path), m);
    } else {
      bad[size_t(rng.integer(0, int64_t(good.size()) - 1))] ^= uint8_t(rng.integer(1, 255));
      write_bytes(found[0], bad);
      // An altered value may pass the checks; what it may not do is crash or
      // loop. An arc is checked when a lookup finds it: a damaged one is one
      // line naming the copy.
      const LanguageModel lm = load_language_model(path);
      LmState state = lm.begin();
      try {
        for (int32_t w = 0; w < int32_t(lm.words().size()); ++w) {
          LmState next;
          // Outside CHECK, which would catch a damaged arc's error as a failure.
          const double score = lm.score(state, w, &next);
          CHECK(std::isfinite(score));
          state = next;
        }
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find(found[0] + " is damaged at arc") != std::string::npos);
      }
    }
  }
  // The text changes: the copy named by the old text's hash is not read.
  write_bytes(found[0], good);
  const ArpaModel other = model(rng);
  write_text_file(path, arpa_text(other, rng), true);
  check_model(load_language_model(path), other);
}

TEST_CASE("load_language_model: a cache folder that cannot be written only costs the parse") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const ArpaModel m = model(rng);
  const std::string path = tmp.file("lm.arpa.gz");
  write_text_file(path, arpa_text(m, rng), true);
  const CacheFolder cache(path + "/below-a-file");
  check_model(load_language_model(path), m);
  check_model(load_language_model(path), m);
  CHECK_THROWS_WITH_AS(load_language_model(tmp.file("missing.arpa")),
                       doctest::Contains((tmp.file("missing.arpa") + ": cannot open").c_str()), Error);
}
