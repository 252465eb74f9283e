// WordHistory against plain vectors of words: random adds, holds, releases
// and sweeps, then compact(), after which every held entry, renumbered,
// still gives its words, timings, depth and hash, and the free ones are gone.
#include <map>

#include "speech/word_history.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Held {
  std::vector<int32_t> words;  // spellings, oldest first
  std::vector<int64_t> firsts;
};

// The entry's chain read back, oldest first.
Held read_back(const WordHistory& h, int32_t id) {
  Held out;
  for (; id != WordHistory::kNone; id = h[id].parent) {
    out.words.insert(out.words.begin(), h[id].spelling);
    out.firsts.insert(out.firsts.begin(), h[id].first_frame);
  }
  return out;
}

}  // namespace

TEST_CASE("word history: compact keeps every held entry's words, hash and depth, and drops the free ones") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    WordHistory h;
    std::vector<int32_t> held;           // one reference each, as a search's hypotheses
    std::map<int32_t, Held> expected;    // what each held entry says, by entry
    int64_t frame = 0;
    std::vector<int32_t> remap;
    for (int round = 0; round < 60; ++round, ++frame) {
      // A frame: new words after held entries (or none), some kept, the rest swept.
      std::vector<int32_t> made;
      for (int64_t i = rng.integer(1, 40); i > 0; --i) {
        const int32_t parent = held.empty() || rng.uniform(0, 1) < 0.1 ? WordHistory::kNone
                                                                        : held[size_t(rng.integer(0, int64_t(held.size()) - 1))];
        const int32_t spelling = int32_t(rng.integer(0, 5));
        const int32_t id = h.add(parent, spelling, spelling, frame, frame);
        Held e = parent == WordHistory::kNone ? Held{} : expected.at(parent);
        e.words.push_back(spelling);
        e.firsts.push_back(frame);
        expected[id] = e;
        made.push_back(id);
      }
      for (int32_t id : made)
        if (rng.uniform(0, 1) < 0.3) {
          h.acquire(id);
          held.push_back(id);
        }
      for (size_t i = 0; i < held.size();)  // older holds let go
        if (rng.uniform(0, 1) < 0.35) {
          h.release(held[i]);
          held.erase(held.begin() + std::ptrdiff_t(i));
        } else {
          ++i;
        }
      h.sweep();
      if (held.empty()) continue;
      const bool compact = rng.uniform(0, 1) < 0.3 || h.sparse();
      std::vector<uint64_t> hashes;
      std::vector<int32_t> depths;
      for (int32_t id : held) hashes.push_back(h.hash(id)), depths.push_back(h.depth(id));
      if (compact) {
        h.compact(remap);
        std::map<int32_t, Held> moved;
        for (int32_t& id : held) {
          const int32_t to = WordHistory::renumbered(remap, id);
          REQUIRE(to != WordHistory::kNone);
          moved[to] = expected.at(id);
          id = to;
        }
        expected = moved;
        CHECK_FALSE(h.sparse());
      }
      for (size_t i = 0; i < held.size(); ++i) {
        const Held got = read_back(h, held[i]), want = expected.at(held[i]);
        REQUIRE(got.words == want.words);
        CHECK(got.firsts == want.firsts);
        CHECK(h.hash(held[i]) == hashes[i]);
        CHECK(h.depth(held[i]) == depths[i]);
        for (size_t j = 0; j < held.size(); ++j)
          CHECK(h.same_words(held[i], held[j]) == (expected.at(held[i]).words == expected.at(held[j]).words));
      }
    }
    for (int32_t id : held) h.release(id);
    h.sweep();
    h.compact(remap);
    CHECK(std::all_of(remap.begin(), remap.end(), [](int32_t r) { return r == WordHistory::kNone; }));
  }
}
