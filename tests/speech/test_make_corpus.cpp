// scripts/speech/make_corpus.py's espeak-ng labels: the IPA each English
// accent says it spoke, as the 39 (IPA_PHONES), run as the corpus runs it.
// Random sentences of words whose CMU dictionary pronunciations the test
// carries: every accent's phones map, the American accent agrees with the
// dictionary, and an R is there exactly where the accent is rhotic.
#include <cstdlib>
#include <sstream>

#include "heads/edit_distance.h"
#include "io/temp_dir.h"
#include "speech/speech_corpus.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// Words and their first CMU dictionary pronunciation, stress dropped: every
// lexical vowel set, r-coloured vowels, flaps, syllabic consonants.
const std::vector<std::pair<std::string, std::string>> kWords = {
    {"car", "K AA R"},          {"near", "N IH R"},        {"fire", "F AY ER"},     {"heard", "HH ER D"},
    {"water", "W AO T ER"},     {"butter", "B AH T ER"},   {"four", "F AO R"},      {"there", "DH EH R"},
    {"sing", "S IH NG"},        {"judge", "JH AH JH"},     {"church", "CH ER CH"},  {"measure", "M EH ZH ER"},
    {"yellow", "Y EH L OW"},    {"house", "HH AW S"},      {"boy", "B OY"},         {"time", "T AY M"},
    {"father", "F AA DH ER"},   {"book", "B UH K"},        {"food", "F UW D"},      {"cat", "K AE T"},
    {"bed", "B EH D"},          {"sit", "S IH T"},         {"seat", "S IY T"},      {"gate", "G EY T"},
    {"boat", "B OW T"},         {"cup", "K AH P"},         {"nurse", "N ER S"},     {"start", "S T AA R T"},
    {"north", "N AO R TH"},     {"square", "S K W EH R"},  {"letter", "L EH T ER"}, {"think", "TH IH NG K"},
    {"vision", "V IH ZH AH N"}, {"good", "G UH D"},        {"mouth", "M AW TH"},    {"choice", "CH OY S"},
    {"price", "P R AY S"},      {"face", "F EY S"},        {"goat", "G OW T"},      {"trap", "T R AE P"},
    {"dress", "D R EH S"},      {"fleece", "F L IY S"},    {"lot", "L AA T"},       {"garden", "G AA R D AH N"},
    {"little", "L IH T AH L"},  {"bottle", "B AA T AH L"}, {"yes", "Y EH S"},       {"zoo", "Z UW"}};

const std::vector<std::string> kAccents = {"en-us",          "en-us-nyc",      "en-gb",          "en-gb-x-rp",
                                           "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-gb-scotland", "en-029"};

// Runs make_corpus.py's labelling on "voice<TAB>text" lines (mode synthesize:
// espeak-ng writes the audio and prints its IPA, as in the corpus) or on
// "<TAB>ipa" lines (mode ipa: the mapping alone); one line of phones per
// input line. Returns the exit status; stderr in *log.
int label(const TempDir& tmp, const std::string& mode, const std::string& lines, std::vector<std::string>* out,
          std::string* log) {
  write_text(tmp.file("label.py"), R"(import sys, tempfile
sys.path.insert(0, sys.argv[1])
import make_corpus
for line in open(sys.argv[3], encoding="utf-8"):
    voice, text = line.rstrip("\n").split("\t")
    if sys.argv[2] == "ipa":
        print(" ".join(make_corpus.ipa_phones(text)))
        continue
    u = {"engine": "espeak", "voice": voice, "variant": "", "pitch": 50, "speed": 160, "words": text}
    with tempfile.TemporaryDirectory() as d:
        print(" ".join(make_corpus.synthesize(u, d + "/x.wav", d)))
)");
  write_text(tmp.file("lines.tsv"), lines);
  const std::string command = "python3 '" + tmp.file("label.py") + "' '" + std::string(LT_SCRIPTS_DIR) + "/speech' " +
                              mode + " '" + tmp.file("lines.tsv") + "' >'" + tmp.file("out.txt") + "' 2>'" +
                              tmp.file("err.txt") + "'";
  const int status = std::system(command.c_str());
  *log = read_text(tmp.file("err.txt"));
  std::istringstream in(read_text(tmp.file("out.txt")));
  out->clear();
  for (std::string line; std::getline(in, line);) out->push_back(line);
  return status;
}

std::vector<int32_t> ids_of(const std::string& phones) {
  std::istringstream in(phones);
  std::vector<int32_t> ids;
  for (std::string p; in >> p;) {
    INFO(p);
    REQUIRE(phone_id(p) > 0);
    ids.push_back(phone_id(p));
  }
  return ids;
}

}  // namespace

TEST_CASE(
    "make_corpus.py: espeak-ng's phones map to the 39 in every English accent, and en-us's match the CMU dictionary") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  std::vector<std::string> texts, references;
  for (int s = 0; s < 6; ++s) {
    std::string text, reference;
    for (int64_t n = rng.integer(5, 10); n > 0; --n) {
      const auto& [word, phones] = kWords[size_t(rng.integer(0, int64_t(kWords.size()) - 1))];
      text += (text.empty() ? "" : " ") + word;
      reference += (reference.empty() ? "" : " ") + phones;
    }
    texts.push_back(text);
    references.push_back(reference);
  }
  std::string lines;
  for (const std::string& accent : kAccents)
    for (const std::string& text : texts) lines += accent + "\t" + text + "\n";
  std::vector<std::string> labels;
  std::string log;
  REQUIRE(label(tmp, "synthesize", lines, &labels, &log) == 0);
  INFO(log);
  REQUIRE(labels.size() == kAccents.size() * texts.size());
  for (size_t a = 0; a < kAccents.size(); ++a) {
    ErrorCounts against_dictionary;
    for (size_t s = 0; s < texts.size(); ++s) {
      INFO(kAccents[a] << ": " << texts[s] << " -> " << labels[a * texts.size() + s]);
      against_dictionary.add(ids_of(references[s]), ids_of(labels[a * texts.size() + s]));
    }
    INFO(kAccents[a] << ": " << against_dictionary.rate() << " of the dictionary's phones differ");
    // The American accent speaks these words as the dictionary writes them
    // (measured: 0 of 167 phones differ read as one sentence); the others
    // differ where the accent does, by 4-16%.
    CHECK(against_dictionary.rate() < (kAccents[a] == "en-us" ? 0.05 : 0.3));
  }
}

TEST_CASE("make_corpus.py: an R is labelled where the accent is rhotic, a centring vowel where it is not") {
  TempDir tmp;
  std::vector<std::string> labels;
  std::string log;
  REQUIRE(label(tmp, "synthesize",
                "en-us\tcar\nen-gb\tcar\nen-gb-x-rp\tcar\nen-gb-scotland\tcar\nen-us\tnear\nen-gb\tnear\n"
                "en-gb\tfour\nen-us\tfour\nen-gb\tcar is\nen-029\tjalapeno\nen-us\taaaaaa\n",
                &labels, &log) == 0);
  INFO(log);
  const std::vector<std::string> expected = {"K AA R",  "K AA", "K AA",   "K AA R",      "N IH R",
                                             "N IH AH", "F AO", "F AO R", "K AA R IH Z",  // a linking R is spoken
                                             "HH AA L AH P EY N Y OW",   // a palatal n (nʲ)
                                             "AE AH AE"};                // vowels written twice (ææ ɐɐ ææ)
  CHECK(labels == expected);
}

TEST_CASE("make_corpus.py: a phone with no mapping stops the corpus with its name") {
  TempDir tmp;
  std::vector<std::string> labels;
  std::string log;
  CHECK(label(tmp, "ipa", "\tk ˈɑː t\n", &labels, &log) == 0);
  CHECK(labels == std::vector<std::string>{"K AA T"});
  CHECK(label(tmp, "ipa", "\tk ʘ t\n", &labels, &log) != 0);
  CHECK(log.find("'ʘ' has no mapping") != std::string::npos);
}

TEST_CASE("make_corpus.py plans the share of short utterances asked for, of every kind, and keeps the sentences' draws") {
  const uint64_t seed = fresh_seed() % 1000000;
  INFO("seed " << seed);
  TempDir tmp;
  // A lexicon of every word the short utterances and the sentences use, and
  // sentences of its words; plan() as main() calls it, with and without shorts.
  write_text(tmp.file("plan.py"), R"(import random, sys
sys.path.insert(0, sys.argv[1])
import make_corpus as mc
seed, share = int(sys.argv[2]), float(sys.argv[3])
words = set("THE A OF AND TO CAT DOG RAN SAT ON MAT HOUSE GREEN BIG".split())
for group in (mc.COMMAND_VERBS, mc.COMMAND_OBJECTS, mc.NAMES, mc.LETTERS, mc.DIGITS, ["please", "stop"]):
    for entry in group:
        words.update(entry.upper().split())
lex = {w: ["AH"] * (1 + len(w) // 2) for w in words}
rng = random.Random(seed)
base = sorted(words - {w.upper() for w in mc.LETTERS})
sentences = [" ".join(rng.choice(base) for _ in range(rng.randint(4, 12))) for _ in range(3000)]
def seconds(u):
    return sum(len(lex[w]) for w in u["words"].split()) * mc.SECONDS_PER_PHONE * u.get("stretch", 1) + 0.4
utts, _ = mc.plan(sentences, lex, 1.0, mc.TRAIN_VOICES, "train", seed, 0, share)
plain, _ = mc.plan(sentences, lex, 1.0, mc.TRAIN_VOICES, "train", seed, 0, 0.0)
short = [u for u in utts if u["words"] not in sentences]
total = sum(seconds(u) for u in utts)
got = sum(seconds(u) for u in short) / total
assert abs(got - share) < 0.01, (got, share)
letters = {w.upper() for w in mc.LETTERS}
kinds = {"letters": any(all(w in letters for w in u["words"].split()) and len(u["words"].split()) > 1 for u in short),
         "digits": any(all(w.lower() in mc.DIGITS for w in u["words"].split()) for u in short),
         "names": any(all(w.lower() in mc.NAMES for w in u["words"].split()) for u in short),
         "commands": any(any(u["words"].lower().endswith(o) for o in mc.COMMAND_OBJECTS) for u in short),
         "words": any(len(u["words"].split()) == 1 for u in short)}
assert all(kinds.values()), kinds
assert all(w in lex for u in utts for w in u["words"].split())
# The sentences read with shorts between them are read as without: voice and settings.
long = [u for u in utts if u["words"] in sentences]
strip = lambda u: {k: v for k, v in u.items() if k != "id"}
assert [strip(u) for u in long] == [strip(u) for u in plain[:len(long)]]
print(len(short), len(long), round(got, 4))
)");
  for (const char* share : {"0.15", "0.4"}) {
    INFO("share " << share);
    const std::string command = "python3 '" + tmp.file("plan.py") + "' '" + std::string(LT_SCRIPTS_DIR) + "/speech' " +
                                std::to_string(seed) + " " + share + " >'" + tmp.file("out.txt") + "' 2>'" +
                                tmp.file("err.txt") + "'";
    CHECK(std::system(command.c_str()) == 0);
    INFO(read_text(tmp.file("err.txt")));
    CHECK(!read_text(tmp.file("out.txt")).empty());
  }
}
