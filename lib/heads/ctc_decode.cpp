// CTC decoding: greedy (best class per frame) and prefix beam search, whose
// prefixes sum the probability of every alignment that emits them (two
// scores each: the alignments ending in a blank, and those ending in the
// prefix's last label, which a repeat of that label extends without
// emitting it again).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "heads/log_space.h"
#include "lt/ctc.h"
#include "lt/error.h"

namespace lt {

std::vector<int32_t> ctc_greedy_decode(const float* logits, int64_t frames, int64_t classes) {
  check(classes >= 2 && frames >= 0, "ctc_greedy_decode: needs the blank and a label, and frames >= 0");
  std::vector<int32_t> out;
  int32_t previous = 0;
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = logits + t * classes;
    const int32_t best = int32_t(std::max_element(row, row + classes) - row);
    if (best != 0 && best != previous) out.push_back(best);
    previous = best;
  }
  return out;
}

CtcPrefixBeam::CtcPrefixBeam(int64_t classes, const CtcBeamOptions& options) : classes_(classes), options_(options) {
  check(classes >= 2, "CTC decoding needs the blank and a label");
  check(options.beam >= 1, "CTC beam width must be >= 1, is " + std::to_string(options.beam));
  reset();
}

void CtcPrefixBeam::reset() { beams_ = {Prefix{{}, 0.0, kLogZero}}; }

void CtcPrefixBeam::push(const float* logits_row) {
  log_softmax_row(logits_row, classes_, logp_);

  std::map<std::vector<int32_t>, std::pair<double, double>> next;  // prefix -> (blank, label)
  auto add = [&](const std::vector<int32_t>& prefix, double blank, double label) {
    auto [it, fresh] = next.try_emplace(prefix, kLogZero, kLogZero);
    it->second.first = log_add(it->second.first, blank);
    it->second.second = log_add(it->second.second, label);
  };
  for (const Prefix& p : beams_) {
    const double total = log_add(p.blank, p.label);
    add(p.labels, total + logp_[0], kLogZero);  // a blank emits nothing
    for (int32_t c = 1; c < classes_; ++c) {
      const double lp = logp_[size_t(c)];
      if (lp < options_.prune) continue;
      std::vector<int32_t> longer = p.labels;
      longer.push_back(c);
      if (!p.labels.empty() && p.labels.back() == c) {
        add(p.labels, kLogZero, p.label + lp);  // the repeat merges into the last label
        add(longer, kLogZero, p.blank + lp);    // after a blank it is a new label
      } else {
        add(longer, kLogZero, total + lp);
      }
    }
  }
  beams_.clear();
  for (auto& [labels, score] : next) beams_.push_back(Prefix{labels, score.first, score.second});
  // Best first; equal scores in label order, so results do not depend on the map.
  std::sort(beams_.begin(), beams_.end(), [](const Prefix& a, const Prefix& b) {
    const double sa = log_add(a.blank, a.label), sb = log_add(b.blank, b.label);
    return sa != sb ? sa > sb : a.labels < b.labels;
  });
  if (beams_.size() > size_t(options_.beam)) beams_.resize(size_t(options_.beam));
}

std::vector<int32_t> CtcPrefixBeam::best() const { return beams_.front().labels; }

std::vector<int32_t> ctc_prefix_beam_search(const float* logits, int64_t frames, int64_t classes,
                                            const CtcBeamOptions& options) {
  CtcPrefixBeam search(classes, options);
  for (int64_t t = 0; t < frames; ++t) search.push(logits + t * classes);
  return search.best();
}

}  // namespace lt
