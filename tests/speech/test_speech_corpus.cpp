// The phone set, lexicons, manifests and the LibriSpeech layout: round trips
// of random corpora the test writes, and one line naming file:line for
// every malformed input.
#include <sys/stat.h>

#include <filesystem>

#include "io/temp_dir.h"
#include "speech/speech_corpus.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

std::string phones_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + phone_names()[size_t(id)];
  return s;
}

}  // namespace

TEST_CASE("phone ids: the 39 ARPAbet phones after the blank, any case, stress dropped") {
  CHECK(phone_names().size() == size_t(kPhoneClasses));
  CHECK(phone_names()[0] == "<blank>");
  for (int32_t i = 1; i < kPhoneClasses; ++i) {
    CHECK(phone_id(phone_names()[size_t(i)]) == i);
    std::string lower;
    for (char c : phone_names()[size_t(i)]) lower += char(std::tolower(c));
    CHECK(phone_id(lower + "1") == i);
  }
  CHECK(phone_id("AH0") == phone_id("AH"));
  CHECK(phone_id("AX") == -1);
  CHECK(phone_id("<blank>") == -1);
}

TEST_CASE("a manifest of random utterances reads back, with phones given or from the lexicon") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  write_text(tmp.file("lex.dict"), ";;; a comment\nhello HH AH0 L OW1\nhello(2) HH EH0 L OW1\nworld W ER1 L D\n"
                                   "world(2) W ER0 L D\nhello(3) HH AH1 L OW0\n");
  const Lexicon lex = read_lexicon(tmp.file("lex.dict"));
  CHECK(lex.words.size() == 2);
  CHECK(lex.phones_of("Hello") == std::vector<int32_t>{phone_id("HH"), phone_id("AH"), phone_id("L"), phone_id("OW")});
  // Alternates without stress marks, each once; references keep the first.
  REQUIRE(lex.alternates.size() == 1);
  CHECK(lex.alternates.at("HELLO") ==
        std::vector<std::vector<int32_t>>{{phone_id("HH"), phone_id("EH"), phone_id("L"), phone_id("OW")}});
  std::string tsv = "phones\tspeaker\tpath\tduration_s\twords\n";  // any column order
  std::vector<std::vector<int32_t>> want;
  for (int i = 0; i < 20; ++i) {
    std::vector<int32_t> p;
    for (int64_t k = rng.integer(1, 12); k > 0; --k) p.push_back(int32_t(rng.integer(1, 39)));
    const bool from_words = i % 5 == 0;
    if (from_words)
      p = {phone_id("HH"), phone_id("AH"), phone_id("L"), phone_id("OW"),
           phone_id("W"),  phone_id("ER"), phone_id("L"), phone_id("D")};
    want.push_back(p);
    tsv += (from_words ? std::string() : phones_text(p)) + "\tv" + std::to_string(i % 3) + "\taudio/" +
           std::to_string(i) + ".wav\t" + std::to_string(0.5 + i) + "\thello world\n";
  }
  write_text(tmp.file("m.tsv"), tsv);
  const std::vector<Utterance> u = read_manifest(tmp.file("m.tsv"), &lex);
  REQUIRE(u.size() == 20);
  for (int i = 0; i < 20; ++i) {
    CHECK(u[size_t(i)].phones == want[size_t(i)]);
    CHECK(u[size_t(i)].audio == tmp.file("audio/" + std::to_string(i) + ".wav"));
    CHECK(u[size_t(i)].speaker == "v" + std::to_string(i % 3));
    CHECK(u[size_t(i)].duration == doctest::Approx(0.5 + i));
  }
}

TEST_CASE("malformed manifests and lexicons are one line naming file:line") {
  TempDir tmp;
  auto error_for = [&](const std::string& text, const Lexicon* lex = nullptr) {
    const std::string path = tmp.file("bad.tsv");
    write_text(path, text);
    const std::string msg = error_of([&] { read_manifest(path, lex); });
    CHECK(msg.rfind(path, 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
    return msg;
  };
  CHECK(error_for("").find("empty manifest") != std::string::npos);
  CHECK(error_for("speaker\tphones\nx\tAA\n").find(":1: no 'path' column") != std::string::npos);
  CHECK(error_for("path\tspeaker\na.wav\tx\n").find("neither a 'phones' nor a 'words'") != std::string::npos);
  CHECK(error_for("path\tphones\na.wav\tAA QQ\n").find(":2: 'QQ' is not one of the 39") != std::string::npos);
  CHECK(error_for("path\tphones\tduration_s\na.wav\tAA\t1.5s\n").find(":2: duration_s '1.5s'") != std::string::npos);
  CHECK(error_for("path\tphones\na.wav\tAA\textra\n").find(":2: 3 fields, the header has 2") != std::string::npos);
  CHECK(error_for("path\twords\na.wav\thello\n").find(":2: no phones, and no lexicon") != std::string::npos);
  Lexicon lex;
  lex.words["HELLO"] = {1};
  CHECK(error_for("path\twords\na.wav\thello there\n", &lex).find(":2: the lexicon has no word 'THERE'") !=
        std::string::npos);
  CHECK(error_for("path\tphones\n").find("no utterances") != std::string::npos);
  const std::string dict = tmp.file("bad.dict");
  write_text(dict, "a AH0\nb QQ\n");
  CHECK(error_of([&] { read_lexicon(dict); }).find(dict + ":2: 'QQ' is not one of the 39") == 0);
  // One rule for a word without phones, bare or before a comment (issue 36).
  for (const char* line : {"b\n", "b # a comment\n", "b\t#\n"}) {
    write_text(dict, std::string("a AH0 # a comment\n") + line);
    CHECK(error_of([&] { read_lexicon(dict); }) == dict + ":2: word 'B' has no pronunciation");
  }
  write_text(dict, "a AH0 # a comment\n");
  CHECK(read_lexicon(dict).phones_of("a") == std::vector<int32_t>{phone_id("AH")});
  // An alternate without its word stands in for it.
  write_text(dict, "b(2) B IY1\nb(3) B EY1\n");
  const Lexicon orphan = read_lexicon(dict);
  CHECK(orphan.phones_of("b") == std::vector<int32_t>{phone_id("B"), phone_id("IY")});
  CHECK(orphan.alternates.at("B") == std::vector<std::vector<int32_t>>{{phone_id("B"), phone_id("EY")}});
  write_text(dict, "c(2) K\n");
  CHECK(read_lexicon(dict).alternates.empty());
}

TEST_CASE("the LibriSpeech layout reads speakers, chapters and transcripts through the lexicon") {
  TempDir tmp;
  Lexicon lex;
  lex.words["HI"] = {phone_id("HH"), phone_id("AY")};
  lex.words["THERE"] = {phone_id("DH"), phone_id("EH"), phone_id("R")};
  const std::string root = tmp.file("LibriSpeech/dev");
  for (auto [speaker, chapter] : {std::pair{"84", "121123"}, {"174", "50561"}}) {
    const std::string dir = root + "/" + speaker + "/" + chapter;
    std::filesystem::create_directories(dir);
    const std::string id = std::string(speaker) + "-" + chapter;
    write_text(dir + "/" + id + ".trans.txt", id + "-0000 HI THERE\n" + id + "-0001 THERE\n");
  }
  const std::vector<Utterance> u = read_librispeech(root, lex);
  REQUIRE(u.size() == 4);
  CHECK(u[0].speaker == "174");  // speakers in name order
  CHECK(u[0].audio == root + "/174/50561/174-50561-0000.flac");
  CHECK(u[0].phones.size() == 5);
  CHECK(u[3].words == "THERE");
  SUBCASE("unknown words: an error naming file, line and word, or left out and counted") {
    write_text(root + "/84/121123/84-121123.trans.txt", "84-121123-0000 HI\n84-121123-0001 HI STRANGER\n");
    const std::string msg = error_of([&] { read_librispeech(root, lex); });
    CHECK(msg.find("84-121123.trans.txt:2: the lexicon has no word 'STRANGER'") != std::string::npos);
    int64_t skipped = 0;
    CHECK(read_librispeech(root, lex, true, &skipped).size() == 3);
    CHECK(skipped == 1);
  }
  CHECK(error_of([&] { read_librispeech(tmp.file("nowhere"), lex); }).find("not a folder") != std::string::npos);
}

TEST_CASE("the CMU dictionary from pocketsphinx-en-us loads and maps every phone") {
  const std::string path = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    std::printf("LT-SKIP: %s is not installed (apt-get install pocketsphinx-en-us)\n", path.c_str());
    return;
  }
  const Lexicon lex = read_lexicon(path);
  CHECK(lex.words.size() > 100000);
  CHECK(lex.phones_of("speech") == std::vector<int32_t>{phone_id("S"), phone_id("P"), phone_id("IY"), phone_id("CH")});
}
