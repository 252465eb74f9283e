// The word search against brute force over every word sequence (its CTC
// probability summed over alignments, times the language model and the
// word bonus), on hand-made posteriors with a known answer, and streamed:
// settled words taken as they come equal the one-pass result; and the phone
// language model decoder (the search over the phones as words) the same way.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "heads/ctc_reference.h"
#include "heads/log_space.h"
#include "speech/arpa_reference.h"
#include "speech/word_search.h"

using namespace lt;
using namespace lt::test;

namespace {

// 3-5 words of 1-3 phones drawn from 4 neighbouring phones, some extending
// an earlier word's prefix, so that shared prefixes, homophones and
// repeated phones occur; at most two words of one phone (brute force stays
// small). With `variants`, some words have a second pronunciation.
Lexicon random_lexicon(Rng& rng, int64_t count, int32_t max_phones, int32_t alphabet, bool variants = false) {
  Lexicon lex;
  std::vector<std::vector<int32_t>> prons;
  const int32_t base = int32_t(rng.integer(1, kPhoneClasses - alphabet));
  int singles = 0;
  while (int64_t(prons.size()) < count) {
    std::vector<int32_t> p;
    if (!prons.empty() && rng.uniform(0, 1) < 0.4) {
      p = prons[size_t(rng.integer(0, int64_t(prons.size()) - 1))];
      p.resize(size_t(rng.integer(1, int64_t(p.size()))));
    }
    const size_t length = size_t(rng.integer(int64_t(p.size()), max_phones));
    while (p.size() < length || p.empty()) p.push_back(base + int32_t(rng.integer(0, alphabet - 1)));
    if (p.size() == 1 && singles == 2) continue;
    singles += p.size() == 1;
    const std::string word = "W" + std::to_string(prons.size());
    if (variants && !prons.empty() && rng.uniform(0, 1) < 0.3) {
      const std::string earlier = "W" + std::to_string(rng.integer(0, int64_t(prons.size()) - 1));
      if (lex.words.at(earlier) != p && lex.alternates.count(earlier) == 0) {
        lex.alternates[earlier] = {p};
        continue;
      }
    }
    lex.words[word] = p;
    prons.push_back(p);
  }
  return lex;
}

// ln P_CTC(labels | frames) by the forward recursion in probability space.
double ctc_log_prob(const std::vector<double>& p, int64_t T, const std::vector<int32_t>& labels) {
  std::vector<int32_t> z = {0};
  for (int32_t l : labels) z.push_back(l), z.push_back(0);
  const size_t U = z.size();
  std::vector<double> a(U, 0.0), b(U);
  a[0] = p[0];
  if (U > 1) a[1] = p[size_t(z[1])];
  for (int64_t t = 1; t < T; ++t) {
    for (size_t u = 0; u < U; ++u) {
      double s = a[u] + (u >= 1 ? a[u - 1] : 0.0);
      if (u >= 2 && z[u] != 0 && z[u] != z[u - 2]) s += a[u - 2];
      b[u] = s * p[size_t(t * kPhoneClasses + z[u])];
    }
    std::swap(a, b);
  }
  return std::log(a[U - 1] + (U > 1 ? a[U - 2] : 0.0));
}

int64_t min_frames(const std::vector<int32_t>& labels) {
  int64_t n = int64_t(labels.size());
  for (size_t i = 1; i < labels.size(); ++i) n += labels[i] == labels[i - 1];
  return n;
}

struct Scored {
  std::vector<std::string> words;
  double score;
};

// Every word sequence whose phones fit in T frames, with its score (the CTC
// probability summed over its words' pronunciations); words the model cannot
// score (not in it, and no <unk>) left out, the others as <unk>.
std::vector<Scored> brute_force(const Lexicon& lex, const ArpaModel* m, const WordSearchOptions& o,
                                const std::vector<double>& probs, int64_t T) {
  auto in_model = [&](const std::string& w) {
    return std::find(m->vocabulary.begin(), m->vocabulary.end(), w) != m->vocabulary.end();
  };
  const bool unk = m && in_model("<unk>");
  std::vector<std::string> allowed;
  for (const auto& [w, p] : lex.words)
    if (!m || unk || in_model(w)) allowed.push_back(w);
  auto ways = [&](const std::string& w) {
    std::vector<std::vector<int32_t>> p = {lex.words.at(w)};
    if (lex.alternates.count(w)) p.insert(p.end(), lex.alternates.at(w).begin(), lex.alternates.at(w).end());
    return p;
  };
  std::map<std::vector<std::string>, double> acoustic;  // ln of the CTC probability summed over pronunciations
  std::vector<std::string> seq;
  std::vector<int32_t> phones;
  auto visit = [&](auto&& self) -> void {
    if (min_frames(phones) > T) return;
    const double lp = ctc_log_prob(probs, T, phones);
    auto [at, fresh] = acoustic.emplace(seq, lp);
    if (!fresh) at->second = std::max(at->second, lp) + std::log1p(std::exp(-std::abs(at->second - lp)));
    for (const std::string& w : allowed) {
      for (const std::vector<int32_t>& p : ways(w)) {
        seq.push_back(w);
        phones.insert(phones.end(), p.begin(), p.end());
        self(self);
        seq.pop_back();
        phones.resize(phones.size() - p.size());
      }
    }
  };
  visit(visit);
  std::vector<Scored> out;
  for (const auto& [words, lp] : acoustic) {
    double score = lp + o.word_bonus * double(words.size());
    if (m) {
      std::vector<std::string> h = {"<s>"};
      for (const std::string& w : words) {
        const std::string as = in_model(w) ? w : "<unk>";
        score += o.lm_weight * naive_log_prob(*m, usable(*m, h), as);
        h.push_back(as);
      }
      score += o.lm_weight * naive_log_prob(*m, usable(*m, h), "</s>");
    }
    out.push_back(Scored{words, score});
  }
  return out;
}

std::vector<std::string> names(const std::vector<RecognizedWord>& words) {
  std::vector<std::string> out;
  for (const RecognizedWord& w : words) out.push_back(w.word);
  return out;
}

// Logits with one class far above the others per frame.
std::vector<float> peaked(const std::vector<int32_t>& classes, Rng& rng, double height, double noise) {
  std::vector<float> logits;
  for (int32_t c : classes) {
    for (int k = 0; k < kPhoneClasses; ++k) logits.push_back(float(rng.normal() * noise + (k == c ? height : 0.0)));
  }
  return logits;
}

}  // namespace

TEST_CASE("word search with a wide beam finds the best word sequence of brute force, with and without an LM") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  for (int trial = 0; trial < 32; ++trial) {
    INFO("trial " << trial);
    const bool variants = trial % 2 == 1;  // words with two pronunciations: their alignments add up
    const Lexicon lex = random_lexicon(rng, rng.integer(3, 5), 3, 4, variants);
    std::vector<std::string> lm_words;
    for (const auto& [w, p] : lex.words)
      if (lm_words.empty() || rng.uniform(0, 1) < 0.75) lm_words.push_back(w);
    const bool use_lm = trial % 4 != 0;
    const ArpaModel m = random_arpa(rng, int(rng.integer(1, 3)), lm_words, rng.uniform(0, 1) < 0.5);
    write_text_file(tmp.file("lm.arpa"), arpa_text(m, rng), false);
    const LanguageModel lm = read_arpa(tmp.file("lm.arpa"));
    WordSearchOptions o;
    o.beam = 1 << 20;  // every hypothesis: the search is exact
    o.lm_weight = rng.uniform(0.3, 2);
    o.word_bonus = rng.uniform(-1, 1);
    const int64_t T = rng.integer(6, 10);
    const std::vector<float> logits = rng.normals(T * kPhoneClasses, 2.5);
    const std::vector<double> probs = softmax_rows(logits.data(), T, kPhoneClasses);
    std::vector<Scored> all = brute_force(lex, use_lm ? &m : nullptr, o, probs, T);
    std::sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });

    WordSearch search(lex, use_lm ? &lm : nullptr, o);
    search.push(logits.data(), T);
    const WordSearchResult r = search.finish();
    INFO("order " << m.order << ", " << all.size() << " sequences, best " << all[0].score);
    CHECK(std::abs(r.score - all[0].score) < 1e-9 * std::max(1.0, std::abs(all[0].score)));
    if (all.size() == 1 || all[0].score - all[1].score > 1e-7) CHECK(names(r.words) == all[0].words);
    for (const RecognizedWord& w : r.words)
      CHECK((w.phones == lex.words.at(w.word) || (lex.alternates.count(w.word) && w.phones == lex.alternates.at(w.word)[0])));
  }
}

namespace {

// The beam search as written down: candidates keyed by (words, phones of
// the word being spoken, last phone) in a std::map, every contribution
// made, the best `beam` kept. The search leaves out the emissions that
// cannot reach its beam; this makes them all.
struct ReferenceBeam {
  using Key = std::tuple<std::vector<std::string>, std::vector<int32_t>, int32_t>;
  struct Scores {
    double blank, label, lm;
    double score() const { return log_add(blank, label) + lm; }
  };
  std::map<Key, Scores> beam = {{Key{}, Scores{0, kLogZero, 0}}};

  // Every pronunciation of every word (the model knows them all).
  static std::vector<std::pair<std::string, std::vector<int32_t>>> pronunciations(const Lexicon& lex) {
    std::vector<std::pair<std::string, std::vector<int32_t>>> out;
    for (const auto& [w, p] : lex.words) {
      out.emplace_back(w, p);
      if (lex.alternates.count(w))
        for (const std::vector<int32_t>& q : lex.alternates.at(w)) out.emplace_back(w, q);
    }
    return out;
  }

  void push(const float* row, const std::vector<std::pair<std::string, std::vector<int32_t>>>& prons,
            const ArpaModel& m, const WordSearchOptions& o) {
    std::vector<double> logp;
    log_softmax_row(row, kPhoneClasses, logp);
    std::map<Key, Scores> next;
    auto add = [&](const Key& k, double blank, double label, double lm) {
      if (blank == kLogZero && label == kLogZero) return;
      auto [at, fresh] = next.emplace(k, Scores{blank, label, lm});
      if (!fresh) at->second.blank = log_add(at->second.blank, blank), at->second.label = log_add(at->second.label, label);
    };
    for (const auto& [k, h] : beam) {
      const auto& [words, spoken, last] = k;
      const double total = log_add(h.blank, h.label);
      add(k, total + logp[0], kLogZero, h.lm);
      if (last > 0 && logp[size_t(last)] >= o.prune) add(k, kLogZero, h.label + logp[size_t(last)], h.lm);
      for (int32_t c = 1; c < kPhoneClasses; ++c) {
        std::vector<int32_t> longer = spoken;
        longer.push_back(c);
        const double from = c == last ? h.blank : total;
        if (logp[size_t(c)] < o.prune || from == kLogZero) continue;
        bool goes_on = false;
        for (const auto& [w, p] : prons) {
          if (p.size() < longer.size() || !std::equal(longer.begin(), longer.end(), p.begin())) continue;
          if (p.size() > longer.size()) {
            goes_on = true;
            continue;
          }
          std::vector<std::string> history = {"<s>"};
          history.insert(history.end(), words.begin(), words.end());
          const double lm = h.lm + o.word_bonus + o.lm_weight * naive_log_prob(m, usable(m, history), w);
          std::vector<std::string> more = words;
          more.push_back(w);
          add(Key{more, {}, c}, kLogZero, from + logp[size_t(c)], lm);
        }
        if (goes_on) add(Key{words, longer, c}, kLogZero, from + logp[size_t(c)], h.lm);
      }
    }
    std::vector<std::pair<Key, Scores>> all(next.begin(), next.end());
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second.score() > b.second.score(); });
    all.resize(std::min(all.size(), size_t(o.beam)));
    beam = std::map<Key, Scores>(all.begin(), all.end());
  }
  const std::vector<std::string>& best() const {
    return std::get<0>(std::max_element(beam.begin(), beam.end(), [](const auto& a, const auto& b) {
                         return a.second.score() < b.second.score();
                       })->first);
  }
};

}  // namespace

TEST_CASE("word search with a narrow beam keeps the beam of the search written down, frame by frame") {
  // Beams of 2 to 8 over 30-50 frames: most emissions cannot reach the beam,
  // and the search leaves them out without changing what it keeps.
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  for (int trial = 0; trial < 24; ++trial) {
    INFO("trial " << trial);
    const bool phones = trial % 3 == 0;  // the phone decoder's lexicon: single-phone words
    Lexicon lex;
    if (phones) {
      const int32_t base = int32_t(rng.integer(1, kPhoneClasses - 6));
      for (int32_t p = base; p < base + 6; ++p) lex.words[phone_names()[size_t(p)]] = {p};
    } else {
      // Without homophones, nor a word one of whose pronunciations begins
      // another: candidates that sound alike and score alike tie (two words
      // without a model or as <unk>s; "X(a) b.." and "X(a b)"), and which of
      // them a beam keeps is arbitrary.
      const Lexicon drawn = random_lexicon(rng, rng.integer(3, 5), 3, 4, trial % 3 == 2);
      auto begins = [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
        return std::equal(a.begin(), a.begin() + std::ptrdiff_t(std::min(a.size(), b.size())), b.begin());
      };
      std::set<std::vector<int32_t>> heard;
      for (const auto& [w, p] : std::map<std::string, std::vector<int32_t>>(drawn.words.begin(), drawn.words.end())) {
        std::vector<std::vector<int32_t>> ways = {p};
        if (drawn.alternates.count(w) && !begins(p, drawn.alternates.at(w)[0])) ways.push_back(drawn.alternates.at(w)[0]);
        if (std::any_of(ways.begin(), ways.end(), [&](const auto& q) { return heard.count(q) > 0; })) continue;
        heard.insert(ways.begin(), ways.end());
        lex.words[w] = p;
        if (ways.size() > 1) lex.alternates[w] = {ways[1]};
      }
    }
    // Every word in a model of order 2 or more whose histories all back off
    // with a weight of their own, for the same reason: "A BC" and "AB C"
    // sound alike, and score alike too without a model, as two <unk>s, or
    // as the same words in another order under unigrams.
    std::vector<std::string> lm_words;
    for (const auto& [w, p] : lex.words) lm_words.push_back(w);
    ArpaModel m = random_arpa(rng, int(rng.integer(2, 4)), lm_words, false);
    for (auto& [g, e] : m.ngrams)
      if (int(g.size()) < m.order && !e.has_backoff) e.has_backoff = true, e.log10_backoff = rng.uniform(-1.5, 0.5);
    write_text_file(tmp.file("lm.arpa"), arpa_text(m, rng), false);
    const LanguageModel lm = read_arpa(tmp.file("lm.arpa"));
    WordSearchOptions o;
    o.beam = int(rng.integer(2, 8));
    o.lm_weight = rng.uniform(0.3, 2);
    o.word_bonus = rng.uniform(-1, 3);
    o.max_delay = 1000;  // nothing forced: the best hypothesis is the reference's
    if (rng.uniform(0, 1) < 0.5) o.prune = -8;
    const int64_t T = rng.integer(30, 50);
    const std::vector<float> logits = rng.normals(T * kPhoneClasses, 3);
    const auto prons = ReferenceBeam::pronunciations(lex);

    WordSearch search(lex, &lm, o);
    ReferenceBeam ref;
    std::vector<std::string> taken;
    for (int64_t t = 0; t < T; ++t) {
      INFO("frame " << t << ", beam " << o.beam);
      search.push(logits.data() + t * kPhoneClasses);
      ref.push(logits.data() + t * kPhoneClasses, prons, m, o);
      for (const std::string& w : names(search.take_settled())) taken.push_back(w);
      std::vector<std::string> best = taken;
      for (const std::string& w : names(search.pending())) best.push_back(w);
      REQUIRE(best == ref.best());
    }
    // The end: the same words and score as the reference's beam gives.
    double best_score = kLogZero;
    std::vector<std::string> best_words;
    std::map<std::vector<std::string>, std::pair<double, double>> ends;  // words -> (summed score, lm part)
    for (const auto& [k, h] : ref.beam) {
      if (!std::get<1>(k).empty()) continue;
      auto [at, fresh] = ends.emplace(std::get<0>(k), std::pair{h.score(), h.lm});
      if (!fresh) at->second.first = log_add(at->second.first, h.score());
    }
    for (const auto& [words, s] : ends) {
      std::vector<std::string> history = {"<s>"};
      history.insert(history.end(), words.begin(), words.end());
      const double score = s.first + o.lm_weight * naive_log_prob(m, usable(m, history), "</s>");
      if (score > best_score) best_score = score, best_words = words;
    }
    const WordSearchResult r = search.finish();
    if (best_score != kLogZero) {
      for (const std::string& w : names(r.words)) taken.push_back(w);
      CHECK(taken == best_words);
      CHECK(std::abs(r.score - best_score) < 1e-9 * std::max(1.0, std::abs(best_score)));
    }
  }
}

TEST_CASE("word search: hand-made posteriors give the known words and frames, and the LM picks between homophones") {
  const auto id = [](const char* p) { return phone_id(p); };
  Lexicon lex;
  lex.words = {{"CAT", {id("K"), id("AE"), id("T")}}, {"CAB", {id("K"), id("AE"), id("B")}},
               {"AT", {id("AE"), id("T")}},           {"A", {id("AH")}},
               {"TAB", {id("T"), id("AE"), id("B")}}, {"GO", {id("G"), id("OW")}},
               {"TO", {id("T"), id("UW")}},           {"TWO", {id("T"), id("UW")}}};
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // K K AE _ T _ AH _
  const std::vector<float> cat_a = peaked({id("K"), id("K"), id("AE"), 0, id("T"), 0, id("AH"), 0}, rng, 10, 0.3);
  WordSearch plain(lex, nullptr);
  plain.push(cat_a.data(), 8);
  const WordSearchResult r = plain.finish();
  REQUIRE(names(r.words) == std::vector<std::string>{"CAT", "A"});
  CHECK(r.words[0].first_frame == 0);
  CHECK(r.words[0].last_frame == 4);
  CHECK(r.words[1].first_frame == 6);
  CHECK(r.words[1].last_frame == 6);

  TempDir tmp;
  write_text_file(tmp.file("go.arpa"),
                  "\\data\\\nngram 1=5\nngram 2=3\n\n\\1-grams:\n-99 <s> -0.5\n-1 </s>\n-0.5 GO -0.3\n-1 TO -0.2\n"
                  "-1 TWO -0.2\n\n\\2-grams:\n-0.1 <s> GO\n-0.3 GO TO\n-2 GO TWO\n\n\\end\\\n",
                  false);
  const LanguageModel lm = read_arpa(tmp.file("go.arpa"));
  // G OW _ T UW UW: "GO TO" and "GO TWO" sound alike; the LM prefers TO.
  const std::vector<float> go_to = peaked({id("G"), id("OW"), 0, id("T"), id("UW"), id("UW")}, rng, 10, 0.3);
  WordSearch with_lm(lex, &lm);
  with_lm.push(go_to.data(), 6);
  CHECK(names(with_lm.finish().words) == std::vector<std::string>{"GO", "TO"});
  // Words the LM does not know: CAT, A and the others score as <unk>, which it lacks.
  CHECK(with_lm.vocabulary() == 3);

  // K AE T T _: an unlikely word ranks below the hypothesis still inside it,
  // whose weaker alignments (T first at frame 3) reach the word first at
  // frame 3; the word keeps the timings of its strongest alignments.
  write_text_file(tmp.file("cat.arpa"), "\\data\\\nngram 1=3\n\\1-grams:\n-99 <s>\n-0.1 </s>\n-9 CAT\n\\end\\\n", false);
  const LanguageModel unlikely = read_arpa(tmp.file("cat.arpa"));
  const std::vector<float> cat = peaked({id("K"), id("AE"), id("T"), id("T"), 0}, rng, 10, 0.3);
  WordSearch late(lex, &unlikely);
  late.push(cat.data(), 5);
  const WordSearchResult c = late.finish();
  REQUIRE(names(c.words) == std::vector<std::string>{"CAT"});
  CHECK(c.words[0].first_frame == 0);
  CHECK(c.words[0].last_frame == 2);
}

TEST_CASE("word search streamed: settled words taken as they come, then finish, equal one pass in bounded memory") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const Lexicon lex = random_lexicon(rng, 10, 4, 12);
  std::vector<std::string> vocabulary;
  for (const auto& [w, p] : lex.words) vocabulary.push_back(w);
  write_text_file(tmp.file("lm.arpa"), arpa_text(random_arpa(rng, 2, vocabulary, true), rng), false);
  const LanguageModel lm = read_arpa(tmp.file("lm.arpa"));
  // A spoken sentence: each phone for 1-3 frames, blanks between some (and
  // between equal phones), over noise.
  std::vector<int32_t> classes = {0};
  for (int k = 0; k < 30; ++k) {
    for (int32_t p : lex.words.at(vocabulary[size_t(rng.integer(0, int64_t(vocabulary.size()) - 1))])) {
      if (p == classes.back() || rng.uniform(0, 1) < 0.3) classes.push_back(0);
      for (int64_t r = rng.integer(1, 3); r > 0; --r) classes.push_back(p);
    }
  }
  const int64_t T = int64_t(classes.size());
  const std::vector<float> logits = peaked(classes, rng, 5, 1.5);
  WordSearchOptions o;
  o.beam = 8;
  o.prune = -12;
  o.max_delay = 6;
  o.lm_weight = 0.5;
  o.word_bonus = 0.5;

  WordSearch one_pass(lex, &lm, o);
  one_pass.push(logits.data(), T);
  CHECK(one_pass.frames() == T);
  const WordSearchResult whole = one_pass.finish();
  CHECK(one_pass.frames() == 0);
  REQUIRE(whole.words.size() > 5);
  for (size_t i = 0; i < whole.words.size(); ++i) {
    const RecognizedWord& w = whole.words[i];
    // Timings come from the strongest contribution at each merge, and one
    // merged hypothesis carries one set for its blank- and phone-ending
    // alignments: a doubled phone's repeat (which needs a blank between)
    // may then show one frame less than its alignments need. Each new
    // phone still takes a frame of its own.
    CHECK(w.last_frame - w.first_frame >= int64_t(w.phones.size()) - 1);
    if (i > 0) CHECK(whole.words[i - 1].last_frame < w.first_frame);
  }

  WordSearch stream(lex, &lm, o);
  for (int round = 0; round < 2; ++round) {  // finish() starts over: a second utterance decodes alike
    std::vector<RecognizedWord> got;
    size_t before_end = 0;
    for (int64_t t = 0; t < T;) {
      const int64_t n = std::min(T - t, rng.integer(1, 5));
      stream.push(logits.data() + t * kPhoneClasses, n);
      t += n;
      for (RecognizedWord& w : stream.take_settled()) got.push_back(std::move(w));
      for (const RecognizedWord& w : stream.pending()) CHECK(w.last_frame > t - 1 - o.max_delay);
      before_end = got.size();
    }
    const WordSearchResult rest = stream.finish();
    got.insert(got.end(), rest.words.begin(), rest.words.end());
    CHECK(before_end > 0);
    CHECK(rest.score == whole.score);
    REQUIRE(got.size() == whole.words.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].word == whole.words[i].word);
      CHECK(got[i].phones == whole.words[i].phones);
      CHECK(got[i].first_frame == whole.words[i].first_frame);
      CHECK(got[i].last_frame == whole.words[i].last_frame);
    }
  }
}

TEST_CASE("word search: searches stepped in turn on one thread each give what they give alone") {
  // What a frame works on belongs to the thread, shared by the searches it
  // runs (a stream group's). Searches of different lexicons, models and
  // beams (the widest grows the shared candidate table for the others)
  // pushed a few frames at a time in a random order equal each run alone:
  // every settled and pending word with its frames, and the final score.
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  struct Case {
    Lexicon lex;
    std::unique_ptr<LanguageModel> lm;
    WordSearchOptions o;
    std::vector<float> logits;
    int64_t T = 0;
  };
  std::vector<Case> cases(4);
  const int beams[] = {2, 8, 64, 300};
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    c.lex = random_lexicon(rng, rng.integer(6, 10), 4, 12, i % 2 == 1);
    std::vector<std::string> vocabulary;
    for (const auto& [w, p] : c.lex.words) vocabulary.push_back(w);
    const std::string path = tmp.file("lm" + std::to_string(i) + ".arpa");
    write_text_file(path, arpa_text(random_arpa(rng, int(rng.integer(2, 3)), vocabulary, true), rng), false);
    c.lm = std::make_unique<LanguageModel>(read_arpa(path));
    std::vector<int32_t> classes = {0};
    for (int k = 0; k < 12; ++k)
      for (int32_t p : c.lex.words.at(vocabulary[size_t(rng.integer(0, int64_t(vocabulary.size()) - 1))])) {
        if (p == classes.back() || rng.uniform(0, 1) < 0.3) classes.push_back(0);
        for (int64_t r = rng.integer(1, 3); r > 0; --r) classes.push_back(p);
      }
    c.T = int64_t(classes.size());
    c.logits = peaked(classes, rng, 5, 2.5);
    c.o.beam = beams[i];
    c.o.prune = -12;
    c.o.max_delay = int(rng.integer(3, 8));
    c.o.lm_weight = rng.uniform(0.3, 1.5);
    c.o.word_bonus = rng.uniform(-0.5, 2);
  }
  // Everything a search hands out, in order, frame by frame.
  auto record = [](WordSearch& s, std::vector<std::string>& out) {
    auto put = [&](const char* what, const std::vector<RecognizedWord>& words) {
      for (const RecognizedWord& w : words)
        out.push_back(std::string(what) + " " + w.word + " " + std::to_string(w.first_frame) + "-" +
                      std::to_string(w.last_frame));
    };
    put("settled", s.take_settled());
    put("pending", s.pending());
  };
  std::vector<std::vector<std::string>> alone(cases.size()), in_turn(cases.size());
  std::vector<double> alone_score(cases.size()), in_turn_score(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    WordSearch s(cases[i].lex, cases[i].lm.get(), cases[i].o);
    for (int64_t t = 0; t < cases[i].T; ++t) {
      s.push(cases[i].logits.data() + t * kPhoneClasses);
      record(s, alone[i]);
    }
    const WordSearchResult r = s.finish();
    for (const RecognizedWord& w : r.words) alone[i].push_back("final " + w.word);
    alone_score[i] = r.score;
  }
  std::vector<std::unique_ptr<WordSearch>> searches;
  for (const Case& c : cases) searches.push_back(std::make_unique<WordSearch>(c.lex, c.lm.get(), c.o));
  std::vector<int64_t> at(cases.size(), 0);
  for (size_t left = cases.size(); left > 0;) {
    const size_t i = size_t(rng.integer(0, int64_t(cases.size()) - 1));
    if (at[i] == cases[i].T) continue;
    for (int64_t n = rng.integer(1, 3); n > 0 && at[i] < cases[i].T; --n, ++at[i]) {
      searches[i]->push(cases[i].logits.data() + at[i] * kPhoneClasses);
      record(*searches[i], in_turn[i]);
    }
    if (at[i] < cases[i].T) continue;
    const WordSearchResult r = searches[i]->finish();
    for (const RecognizedWord& w : r.words) in_turn[i].push_back("final " + w.word);
    in_turn_score[i] = r.score;
    --left;
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("search " << i << ", beam " << cases[i].o.beam);
    auto settled = [](const std::string& e) { return e.rfind("settled", 0) == 0; };
    CHECK(std::count_if(alone[i].begin(), alone[i].end(), settled) > 0);
    CHECK(in_turn[i] == alone[i]);
    CHECK(in_turn_score[i] == alone_score[i]);
  }
}

TEST_CASE("word search: rivals that never agree give way to the best one max_delay frames after its word") {
  // Two homophones score alike at every frame, so only the delay settles them.
  Lexicon lex;
  lex.words["A"] = {5};
  lex.words["B"] = {5};
  lex.words["C"] = {9};
  const std::vector<int32_t> classes = {0, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  Rng rng(41);
  const std::vector<float> logits = peaked(classes, rng, 6, 0.5);
  for (int delay : {0, 3, 7}) {
    WordSearchOptions o;
    o.max_delay = delay;
    WordSearch search(lex, nullptr, o);
    std::vector<RecognizedWord> got;
    bool homophone_settled = false;
    for (int64_t t = 0; t < int64_t(classes.size()); ++t) {
      search.push(logits.data() + t * kPhoneClasses);
      std::vector<RecognizedWord> now = search.take_settled();
      for (const RecognizedWord& w : now) {
        CHECK(t - w.last_frame <= delay);
        if (w.phones != std::vector<int32_t>{5}) continue;
        CHECK(t - w.last_frame == delay);  // not before: A and B tie
        homophone_settled = true;
      }
      got.insert(got.end(), now.begin(), now.end());
    }
    CHECK(homophone_settled);
    const WordSearchResult rest = search.finish();
    got.insert(got.end(), rest.words.begin(), rest.words.end());
    REQUIRE(got.size() == 2);
    CHECK((got[0].word == "A" || got[0].word == "B"));
    CHECK(got[0].last_frame == 1);
    CHECK(got[1].word == "C");
    CHECK(got[1].first_frame == 12);
  }
}

TEST_CASE("word search: bad logits, options and lexicons are errors") {
  Lexicon lex;
  lex.words = {{"HI", {phone_id("HH"), phone_id("AY")}}};
  WordSearch search(lex, nullptr);
  std::vector<float> row(kPhoneClasses, 0.5f);
  row[7] = std::nanf("");
  CHECK(error_of([&] { search.push(row.data()); }).find("frame 0, class 7: the logit is not finite") !=
        std::string::npos);
  WordSearchOptions narrow;
  narrow.beam = 0;
  CHECK(error_of([&] { WordSearch(lex, nullptr, narrow); }).find("beam width must be >= 1") != std::string::npos);
  Lexicon bad;
  bad.words = {{"X", {kPhoneClasses}}};
  CHECK(error_of([&] { WordSearch(bad, nullptr); }).find("phone id 40") != std::string::npos);
  TempDir tmp;
  write_text_file(tmp.file("lm.arpa"), "\\data\\\nngram 1=3\n\\1-grams:\n-99 <s>\n-1 </s>\n-1 BYE\n\\end\\\n", false);
  const LanguageModel lm = read_arpa(tmp.file("lm.arpa"));
  const std::string msg = error_of([&] { WordSearch(lex, &lm); });
  CHECK(msg.rfind(tmp.file("lm.arpa") + ": no word of the lexicon", 0) == 0);
  // With <unk> every word is searched but the sentence marks: a lexicon of those alone.
  write_text_file(tmp.file("unk.arpa"), "\\data\\\nngram 1=3\n\\1-grams:\n-99 <s>\n-1 </s>\n-1 <unk>\n\\end\\\n", false);
  write_text_file(tmp.file("marks.dict"), "<s> AA\n</s> AE\n", false);
  const LanguageModel unk = read_arpa(tmp.file("unk.arpa"));
  const Lexicon marks = read_lexicon(tmp.file("marks.dict"));
  CHECK(error_of([&] { WordSearch(marks, &unk); })
            .rfind(tmp.file("marks.dict") + ": the lexicon has no word with a pronunciation", 0) == 0);
}

TEST_CASE("phone LM decoder: the phones of brute force's best sequence, and taken as they settle equal one pass") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  for (int trial = 0; trial < 12; ++trial) {
    INFO("trial " << trial);
    // Three neighbouring phones carry the frames; every other phone is ~e^-40
    // less likely, so brute force over the three finds the same best sequence.
    const int32_t base = int32_t(rng.integer(1, kPhoneClasses - 3));
    Lexicon lex;
    std::vector<std::string> three;
    for (int32_t p = base; p < base + 3; ++p) {
      three.push_back(phone_names()[size_t(p)]);
      lex.words[three.back()] = {p};
    }
    const ArpaModel m = random_arpa(rng, int(rng.integer(1, 3)), three, rng.uniform(0, 1) < 0.5);
    write_text_file(tmp.file("phones.arpa"), arpa_text(m, rng), false);
    const LanguageModel lm = read_arpa(tmp.file("phones.arpa"));
    WordSearchOptions o;
    o.beam = 1 << 20;
    o.prune = -20;  // the other phones are never extended: the search stays exact over the three
    o.lm_weight = rng.uniform(0.3, 2);
    o.word_bonus = rng.uniform(-1, 1);
    const int64_t T = rng.integer(6, 9);
    std::vector<float> logits = rng.normals(T * kPhoneClasses, 2.5);
    for (int64_t i = 0; i < T * kPhoneClasses; ++i) {
      const int32_t c = int32_t(i % kPhoneClasses);
      if (c != 0 && (c < base || c >= base + 3)) logits[size_t(i)] = -40.f;
    }
    std::vector<Scored> all = brute_force(lex, &m, o, softmax_rows(logits.data(), T, kPhoneClasses), T);
    std::sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });

    std::unique_ptr<CtcDecoder> whole = make_phone_lm_decoder(lm, o), streamed = make_phone_lm_decoder(lm, o);
    std::vector<CtcToken> one_pass, settled;
    for (int64_t t = 0; t < T; ++t) {
      whole->push(logits.data() + t * kPhoneClasses);
      streamed->push(logits.data() + t * kPhoneClasses);
      streamed->take_settled(settled);
    }
    whole->finish();
    whole->take_settled(one_pass);
    streamed->finish();
    streamed->take_settled(settled);
    CHECK(settled == one_pass);
    CHECK(streamed->tentative().empty());
    std::vector<std::string> got;
    for (const CtcToken& p : one_pass) {
      got.push_back(phone_names()[size_t(p.label)]);
      CHECK(p.start == p.end);  // the frame that first emits it
      CHECK((p.start >= 0 && p.start < T));
    }
    if (all.size() == 1 || all[0].score - all[1].score > 1e-7) CHECK(got == all[0].words);
  }
}
