// lt.h's corpora and scores (lt-asr --ref): a manifest the test writes from
// random utterances reads back as written (phones without stress, words in
// upper case, phones of words without any from the test's own lexicon), and
// lt_score_tokens's counts equal an edit distance computed here, on random
// token sequences. Bad input is one line.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "c_api_util.h"
#include "io/temp_dir.h"
#include "lt.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

const std::vector<std::string> kPhones = {"AA", "AE", "AH", "AO", "AW", "AY", "B",  "CH", "D",  "DH",
                                          "EH", "ER", "EY", "F",  "G",  "HH", "IH", "IY", "JH", "K",
                                          "L",  "M",  "N",  "NG", "OW", "OY", "P",  "R",  "S",  "SH",
                                          "T",  "TH", "UH", "UW", "V",  "W",  "Y",  "Z",  "ZH"};

std::string random_word(Rng& rng) {
  std::string w;
  for (int64_t i = rng.integer(1, 8); i > 0; --i) w += char('a' + rng.integer(0, 25));
  return w;
}
std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct Written {
  std::string audio, speaker, transcript;
  std::vector<std::string> phones, words;
  double duration = 0;
};

std::vector<const char*> pointers(const std::vector<std::string>& texts) {
  std::vector<const char*> out;
  for (const std::string& t : texts) out.push_back(t.c_str());
  return out;
}

}  // namespace

TEST_CASE("lt_corpus_read gives a manifest's utterances as written: phones without stress, words upper case") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  // A lexicon of random words, for the utterances written without phones.
  std::vector<std::pair<std::string, std::vector<std::string>>> lexicon;
  std::string lexicon_text;
  for (int i = 0; i < 20; ++i) {
    std::vector<std::string> pron;
    for (int64_t k = rng.integer(1, 5); k > 0; --k) pron.push_back(kPhones[size_t(rng.integer(0, 38))]);
    lexicon.push_back({random_word(rng) + std::to_string(i), pron});
    lexicon_text += lexicon.back().first;
    for (const std::string& p : pron) lexicon_text += " " + p;
    lexicon_text += "\n";
  }
  const std::string lexicon_path = dir.file("lexicon.dict");
  write_text(lexicon_path, lexicon_text);

  std::vector<Written> want;
  std::string manifest = "speaker\tpath\twords\tphones\tduration_s\n";
  for (int64_t n = rng.integer(1, 30); n > 0; --n) {
    Written w;
    w.audio = dir.file("audio/" + std::to_string(n) + ".flac");
    w.speaker = rng.integer(0, 3) == 0 ? "" : random_word(rng);
    w.duration = double(rng.integer(0, 40000)) / 1000;
    std::string written_phones;
    const bool from_lexicon = rng.integer(0, 1) == 1;
    for (int64_t k = rng.integer(1, 6); k > 0; --k) {
      const auto& [word, pron] = lexicon[size_t(rng.integer(0, 19))];
      // words in any case, any spacing
      std::string shown = word;
      for (char& c : shown)
        if (rng.integer(0, 1)) c = char(std::toupper(static_cast<unsigned char>(c)));
      w.transcript += (w.transcript.empty() ? "" : std::string(size_t(rng.integer(1, 3)), ' ')) + shown;
      w.words.push_back(upper(word));
      if (from_lexicon) w.phones.insert(w.phones.end(), pron.begin(), pron.end());
    }
    if (!from_lexicon)
      for (int64_t k = rng.integer(1, 40); k > 0; --k) {
        const std::string p = kPhones[size_t(rng.integer(0, 38))];
        w.phones.push_back(p);
        std::string shown = rng.integer(0, 1) ? p : std::string(p.size(), ' ');
        for (size_t c = 0; c < p.size(); ++c) shown[c] = rng.integer(0, 1) ? p[c] : char(std::tolower(p[c]));
        if (rng.integer(0, 1)) shown += char('0' + rng.integer(0, 2));  // a stress digit
        written_phones += (written_phones.empty() ? "" : " ") + shown;
      }
    char duration[32];
    std::snprintf(duration, sizeof duration, "%.3f", w.duration);
    manifest += w.speaker + "\t" + w.audio + "\t" + w.transcript + "\t" + written_phones + "\t" + duration + "\n";
    want.push_back(w);
  }
  const std::string path = dir.file("corpus.tsv");
  write_text(path, manifest);

  lt_corpus* corpus = nullptr;
  REQUIRE_MESSAGE(lt_corpus_read(path.c_str(), lexicon_path.c_str(), &corpus) == LT_OK, std::string(lt_last_error()));
  REQUIRE(lt_corpus_size(corpus) == int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("utterance " << i);
    const lt_utterance u = lt_corpus_utterance(corpus, int64_t(i));
    CHECK(std::string(u.audio) == want[i].audio);
    CHECK(std::string(u.speaker) == want[i].speaker);
    CHECK(std::string(u.transcript) == want[i].transcript);
    CHECK(u.duration == doctest::Approx(want[i].duration).epsilon(1e-9));
    CHECK(std::vector<std::string>(u.phones, u.phones + u.phone_count) == want[i].phones);
    CHECK(std::vector<std::string>(u.words, u.words + u.word_count) == want[i].words);
  }
  CHECK(lt_corpus_utterance(corpus, int64_t(want.size())).audio == nullptr);
  CHECK(lt_corpus_utterance(corpus, -1).audio == nullptr);
  lt_corpus_free(corpus);
}

TEST_CASE("lt_corpus_read refuses a manifest it cannot read, in one line naming the file and line") {
  TempDir dir;
  lt_corpus* corpus = nullptr;
  const std::string no_path = dir.file("no-path.tsv");
  write_text(no_path, "audio\tphones\nx.wav\tAH\n");
  CHECK(lt_corpus_read(no_path.c_str(), nullptr, &corpus) == LT_ERROR);
  CHECK(corpus == nullptr);
  CHECK(std::string(lt_last_error()).rfind(no_path + ":1: no 'path' column", 0) == 0);
  const std::string bad_phone = dir.file("bad-phone.tsv");
  write_text(bad_phone, "path\tphones\nx.wav\tAH QQ\n");
  CHECK(lt_corpus_read(bad_phone.c_str(), nullptr, &corpus) == LT_ERROR);
  CHECK(std::string(lt_last_error()).rfind(bad_phone + ":2: 'QQ'", 0) == 0);
  CHECK(std::string(lt_last_error()).find('\n') == std::string::npos);
  CHECK(lt_corpus_read(dir.file("missing.tsv").c_str(), nullptr, &corpus) == LT_ERROR);
  CHECK(lt_corpus_read(nullptr, nullptr, &corpus) == LT_ERROR_ARGUMENT);
  CHECK(lt_corpus_read(no_path.c_str(), nullptr, nullptr) == LT_ERROR_ARGUMENT);
  CHECK(lt_corpus_size(nullptr) == 0);
  lt_corpus_free(nullptr);
}

TEST_CASE("lt_score_tokens: the edit distance of random sequences, its edits adding up, summed over pairs") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  lt_error_counts total{};
  int64_t want_errors = 0, want_reference = 0;
  for (int pair = 0; pair < 200; ++pair) {
    const int64_t symbols = rng.integer(1, 6);  // few symbols: many near matches
    std::vector<std::string> ref, hyp;
    for (int64_t i = rng.integer(0, 25); i > 0; --i) ref.push_back("w" + std::to_string(rng.integer(1, symbols)));
    for (int64_t i = rng.integer(0, 25); i > 0; --i) hyp.push_back("w" + std::to_string(rng.integer(1, symbols)));
    const std::vector<const char*> r = pointers(ref), h = pointers(hyp);
    lt_error_counts one{};
    REQUIRE(lt_score_tokens(r.data(), int64_t(r.size()), h.data(), int64_t(h.size()), &one) == LT_OK);
    INFO("pair " << pair << ": " << ref.size() << " against " << hyp.size());
    CHECK(one.errors == edit_distance(ref, hyp));
    CHECK(one.reference == int64_t(ref.size()));
    CHECK(one.substitutions + one.deletions + one.insertions == one.errors);
    CHECK(one.deletions - one.insertions == int64_t(ref.size()) - int64_t(hyp.size()));
    CHECK(one.substitutions >= 0);
    REQUIRE(lt_score_tokens(r.data(), int64_t(r.size()), h.data(), int64_t(h.size()), &total) == LT_OK);
    want_errors += edit_distance(ref, hyp);
    want_reference += int64_t(ref.size());
  }
  CHECK(total.errors == want_errors);
  CHECK(total.reference == want_reference);
  CHECK(lt_error_rate(&total) == double(want_errors) / double(std::max<int64_t>(want_reference, 1)));
  lt_error_counts none{};
  none.errors = 3;
  CHECK(lt_error_rate(&none) == 3.0);  // no reference: the errors alone

  const char* one_token[] = {"A"};
  const char* with_null[] = {"A", nullptr};
  CHECK(lt_score_tokens(one_token, 1, with_null, 2, &total) == LT_ERROR_ARGUMENT);
  CHECK(std::string(lt_last_error()) == "hypothesis[1] is NULL");
  CHECK(lt_score_tokens(one_token, -1, one_token, 1, &total) == LT_ERROR_ARGUMENT);
  CHECK(lt_score_tokens(nullptr, 1, one_token, 1, &total) == LT_ERROR_ARGUMENT);
  CHECK(lt_score_tokens(nullptr, 0, nullptr, 0, nullptr) == LT_ERROR_ARGUMENT);
  CHECK(total.errors == want_errors);  // a refused call adds nothing
}
