// CTC decoding against brute force: greedy against its definition (labels
// and frames), prefix beam search with a wide beam against the most probable
// label sequence over all alignments, and tokens handed out as frames arrive
// against the whole utterance.
#include "heads/ctc.h"
#include "heads/ctc_reference.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("greedy CTC decoding merges repeats of each frame's best class, drops blanks, and times each run") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t T = rng.integer(1, 30), C = rng.integer(2, 6);
    const Tensor logits = rng.randn({T, C}, 2);
    std::vector<int32_t> best;
    for (int64_t t = 0; t < T; ++t) {
      int32_t b = 0;
      for (int32_t c = 1; c < C; ++c)
        if (logits.data()[t * C + c] > logits.data()[t * C + b]) b = c;
      best.push_back(b);
    }
    const std::vector<CtcToken> tokens = ctc_decode(logits.data(), T, C);
    CHECK(labels_of(tokens) == collapse(best));
    // Each token spans exactly its run of frames.
    for (const CtcToken& k : tokens) {
      REQUIRE(0 <= k.start);
      REQUIRE(k.start <= k.end);
      REQUIRE(k.end < T);
      for (int64_t t = k.start; t <= k.end; ++t) CHECK(best[size_t(t)] == k.label);
      CHECK((k.start == 0 || best[size_t(k.start - 1)] != k.label));
      CHECK((k.end == T - 1 || best[size_t(k.end + 1)] != k.label));
    }
  }
}

TEST_CASE("prefix beam search with a wide beam finds the most probable label sequence (brute force)") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t T = rng.integer(1, 6), C = rng.integer(2, 4);
    // Peaked rows make the best sequence differ from greedy's more often.
    const Tensor logits = rng.randn({T, C}, 1.5);
    const auto all = all_label_sequences(logits.data(), T, C);
    auto best = all.begin();
    for (auto it = all.begin(); it != all.end(); ++it)
      if (it->second > best->second) best = it;
    CtcBeamOptions wide;
    wide.beam = 1 << 12;  // every prefix: the search is exact
    INFO("T " << T << " C " << C);
    CHECK(labels_of(ctc_decode(logits.data(), T, C, wide)) == best->first);
  }
}

TEST_CASE("decoders hand out settled tokens in order as frames arrive, ending with the whole utterance's") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int beam : {1, 2, 6}) {
    // Long enough that the beam's tree is compacted several times.
    const int64_t T = 3000, C = 8;
    const Tensor logits = rng.randn({T, C}, 2.5);
    CtcBeamOptions options;
    options.beam = beam;
    options.max_delay = 50;
    options.prune = beam == 2 ? -8.f : -1e30f;
    const std::vector<CtcToken> whole = ctc_decode(logits.data(), T, C, options);
    std::unique_ptr<CtcDecoder> d = make_ctc_decoder(C, options);
    std::vector<CtcToken> taken;
    int64_t settled_early = 0;
    for (int64_t t = 0; t < T; ++t) {
      d->push(logits.data() + t * C);
      d->take_settled(taken);
      // What is settled never changes: it is the start of the final result.
      REQUIRE(taken.size() <= whole.size());
      for (size_t i = 0; i < taken.size(); ++i) REQUIRE(taken[i] == whole[i]);
      std::vector<CtcToken> now = taken, tail = d->tentative();
      now.insert(now.end(), tail.begin(), tail.end());
      for (size_t i = 1; i < now.size(); ++i) REQUIRE(now[i - 1].end <= now[i].start);
      if (t == T / 2) settled_early = int64_t(taken.size());
    }
    d->finish();
    d->take_settled(taken);
    CHECK(taken == whole);
    CHECK(d->tentative().empty());
    // Tokens settle within a bounded delay (bounded memory for a stream).
    const int64_t old_tokens = std::count_if(whole.begin(), whole.end(),
                                             [&](const CtcToken& k) { return k.start <= T / 2 - 2 * options.max_delay; });
    CHECK(settled_early >= old_tokens);
    INFO("beam " << beam << ", " << whole.size() << " tokens");
    for (const CtcToken& k : whole) CHECK((0 <= k.start && k.start <= k.end && k.end < T));
  }
}

TEST_CASE("prefix beam search of width 1 without pruning keeps the single best prefix, and a label's frames cover its peak") {
  // Hand-made posteriors: label 1 on frames 1-3, blank, label 1 again on 5, label 2 on 7-8.
  const int64_t T = 10, C = 3;
  std::vector<float> logits(size_t(T * C), 0.f);
  const int32_t peak[T] = {0, 1, 1, 1, 0, 1, 0, 2, 2, 0};
  for (int64_t t = 0; t < T; ++t) logits[size_t(t * C + peak[t])] = 8.f;
  for (int beam : {1, 4}) {
    CtcBeamOptions options;
    options.beam = beam;
    const std::vector<CtcToken> tokens = ctc_decode(logits.data(), T, C, options);
    INFO("beam " << beam);
    std::string got;
    for (const CtcToken& k : tokens) got += std::to_string(k.label) + " " + std::to_string(k.start) + ".." + std::to_string(k.end) + "; ";
    INFO(got);
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[0] == CtcToken{1, 1, 3});
    CHECK(tokens[1] == CtcToken{1, 5, 5});
    CHECK(tokens[2] == CtcToken{2, 7, 8});
  }
}
