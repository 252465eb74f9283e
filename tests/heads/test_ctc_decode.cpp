// CTC decoding against brute force: greedy against its definition, prefix
// beam search with a wide beam against the most probable label sequence over
// all alignments, and streaming frame by frame against the whole utterance.
#include "heads/ctc_reference.h"
#include "lt/ctc.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("greedy CTC decoding merges repeats of each frame's best class and drops blanks") {
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
    CHECK(ctc_greedy_decode(logits.data(), T, C) == collapse(best));
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
    CHECK(ctc_prefix_beam_search(logits.data(), T, C, wide) == best->first);
  }
}

TEST_CASE("prefix beam search frame by frame equals the whole utterance, and reset starts over") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t T = 40, C = 8;
  const Tensor logits = rng.randn({T, C}, 2);
  CtcBeamOptions options;
  options.beam = 6;
  options.prune = -8;
  const std::vector<int32_t> whole = ctc_prefix_beam_search(logits.data(), T, C, options);
  CtcPrefixBeam stream(C, options);
  for (int round = 0; round < 2; ++round) {
    for (int64_t t = 0; t < T; ++t) stream.push(logits.data() + t * C);
    CHECK(stream.best() == whole);
    stream.reset();
  }
  CHECK(stream.best().empty());
}
