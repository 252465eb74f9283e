// CTC prefix beam search (Hannun et al. 2014) over frames that arrive one at
// a time. Prefixes are nodes of a tree (parent, label), so extending one is
// O(1) and two hypotheses that share their beginning share its nodes. Each
// kept prefix has two scores: the alignments ending in a blank, and those
// ending in its last label, which a repeat of that label extends without
// emitting it again. A token is settled once every kept prefix continues
// past it; the tree above the last settled token is then dropped, so memory
// follows the beam, not the stream's length.
//
// Times: a node is shared by every hypothesis through it and enters the beam
// as soon as it is possible, often frames before its label is spoken. Its
// start is the frame where the most probability entered its label (the
// parent's alignments times the label's posterior), its end the last frame
// it was kept with the label more likely than a blank after it; tokens are
// then made to follow one another (each starts after the previous ends).
#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "common/error.h"
#include "heads/ctc_decoders.h"
#include "heads/log_space.h"

namespace lt {

namespace {

class PrefixBeamDecoder final : public CtcDecoder {
 public:
  PrefixBeamDecoder(int64_t classes, const CtcBeamOptions& options) : classes_(classes), options_(options) {
    nodes_.push_back(Node{0, -1, 0, -1, -1, 0.0});
    beams_.push_back(Beam{0, 0.0, kLogZero});
  }

  void push(const float* row) override {
    check(!finished_, "CTC decoder: push after finish");
    log_softmax_row(row, classes_, logp_);
    extend();
    keep_best();
    force_old_tokens();
    settle();
    ++t_;
    if (int64_t(nodes_.size()) > compact_at_) compact();
  }

  void take_settled(std::vector<CtcToken>& out) override {
    out.insert(out.end(), settled_.begin(), settled_.end());
    settled_.clear();
  }

  void finish() override {
    if (finished_) return;
    hand_out(beams_.front().node);
    finished_ = true;
  }

  std::vector<CtcToken> tentative() const override {
    std::vector<CtcToken> out;
    if (!finished_) path(beams_.front().node, out);
    return out;
  }

 private:
  struct Node {
    int32_t label, parent;
    int64_t depth, start, end;  // labels from the root; frames of the token
    double entry;               // the most log-probability that entered the label at one frame (at start)
  };
  struct Beam {
    int32_t node;
    double blank, label;
  };
  // A prefix this frame may keep: an existing node, or parent's child by
  // label not made yet (node -1). Identified by (parent, label).
  struct Candidate {
    uint64_t key;
    int32_t parent, label, node;
    double blank, label_score, entry;  // entry: what enters the label at this frame (not its repeats)
    double total() const { return log_add(blank, label_score); }
  };
  static uint64_t key(int32_t parent, int32_t label) { return uint64_t(uint32_t(parent)) << 32 | uint32_t(label); }

  void add(int32_t parent, int32_t label, int32_t node, double blank, double label_score, double entry) {
    const uint64_t k = key(parent, label);
    auto [it, fresh] = index_.try_emplace(k, int32_t(candidates_.size()));
    if (fresh) candidates_.push_back(Candidate{k, parent, label, node, kLogZero, kLogZero, kLogZero});
    Candidate& c = candidates_[size_t(it->second)];
    c.blank = log_add(c.blank, blank);
    c.label_score = log_add(c.label_score, label_score);
    c.entry = log_add(c.entry, entry);
  }

  void extend() {
    candidates_.clear();
    index_.clear();
    for (const Beam& b : beams_) {
      const Node n = nodes_[size_t(b.node)];
      const double total = log_add(b.blank, b.label);
      add(n.parent, n.label, b.node, total + logp_[0], kLogZero, kLogZero);  // a blank emits nothing
      for (int32_t c = 1; c < classes_; ++c) {
        const double lp = logp_[size_t(c)];
        if (lp < options_.prune) continue;
        const auto child = children_.find(key(b.node, c));
        const int32_t child_node = child == children_.end() ? -1 : child->second;
        if (c == n.label) {
          add(n.parent, n.label, b.node, kLogZero, b.label + lp, kLogZero);  // the repeat merges into the last label
          add(b.node, c, child_node, kLogZero, b.blank + lp, b.blank + lp);   // after a blank it is a new label
        } else {
          add(b.node, c, child_node, kLogZero, total + lp, total + lp);
        }
      }
    }
  }

  // The beam's best candidates, best first; equal scores by key, so the
  // order never depends on the hash map's.
  void keep_best() {
    order_.resize(candidates_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = int32_t(i);
    const size_t keep = std::min(order_.size(), size_t(options_.beam));
    std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(), [&](int32_t a, int32_t b) {
      const Candidate &ca = candidates_[size_t(a)], &cb = candidates_[size_t(b)];
      const double sa = ca.total(), sb = cb.total();
      return sa != sb ? sa > sb : ca.key < cb.key;
    });
    beams_.clear();
    for (size_t i = 0; i < keep; ++i) {
      Candidate& c = candidates_[size_t(order_[i])];
      if (c.node < 0) {
        c.node = int32_t(nodes_.size());
        nodes_.push_back(Node{c.label, c.parent, nodes_[size_t(c.parent)].depth + 1, t_, t_, c.entry});
        children_.emplace(c.key, c.node);
      }
      Node& n = nodes_[size_t(c.node)];
      if (c.entry > n.entry) n.entry = c.entry, n.start = t_;
      if (c.label_score > c.blank) n.end = t_;
      beams_.push_back(Beam{c.node, c.blank, c.label_score});
    }
  }

  // The best hypothesis's deepest token older than max_delay frames (short
  // of its last) is taken as settled: hypotheses that do not continue past it
  // are dropped.
  void force_old_tokens() {
    const int32_t best = beams_.front().node;
    int32_t forced = -1;
    for (int32_t n = nodes_[size_t(best)].parent; n != handed_ && n >= 0; n = nodes_[size_t(n)].parent)
      if (nodes_[size_t(n)].start <= t_ - options_.max_delay) {
        forced = n;
        break;
      }
    if (forced < 0) return;
    auto continues_past = [&](int32_t n) {
      for (n = nodes_[size_t(n)].parent; n >= 0 && nodes_[size_t(n)].depth >= nodes_[size_t(forced)].depth;
           n = nodes_[size_t(n)].parent)
        if (n == forced) return true;
      return false;
    };
    beams_.erase(std::remove_if(beams_.begin(), beams_.end(), [&](const Beam& b) { return !continues_past(b.node); }),
                 beams_.end());
  }

  // Hands out the tokens every kept prefix has and none still ends in: the
  // beams' common ancestor, or its parent when it is a beam's own last label.
  // The last one handed out ends before the earliest next token any beam
  // has after it, which is where the final result continues.
  void settle() {
    int32_t common = beams_.front().node;
    for (const Beam& b : beams_) {
      int32_t a = common, n = b.node;
      while (nodes_[size_t(n)].depth > nodes_[size_t(a)].depth) n = nodes_[size_t(n)].parent;
      while (nodes_[size_t(a)].depth > nodes_[size_t(n)].depth) a = nodes_[size_t(a)].parent;
      while (a != n) a = nodes_[size_t(a)].parent, n = nodes_[size_t(n)].parent;
      common = a;
    }
    bool a_beam_ends_there = false;
    for (const Beam& b : beams_) a_beam_ends_there |= b.node == common;
    if (common == handed_) return;
    if (a_beam_ends_there) common = nodes_[size_t(common)].parent;
    if (common == handed_) return;
    int64_t next_start = INT64_MAX;
    for (const Beam& b : beams_) {
      int32_t n = b.node;
      while (nodes_[size_t(n)].parent != common) n = nodes_[size_t(n)].parent;
      next_start = std::min(next_start, nodes_[size_t(n)].start);
    }
    hand_out(common, next_start);
  }

  // Tokens from after handed_ down to node, root first, each starting after
  // the previous one ends and ending before the next one starts (next_start
  // bounds the last).
  void path(int32_t node, std::vector<CtcToken>& out, int64_t next_start = INT64_MAX) const {
    const size_t first = out.size();
    for (int32_t n = node; n != handed_; n = nodes_[size_t(n)].parent)
      out.push_back(CtcToken{nodes_[size_t(n)].label, nodes_[size_t(n)].start, nodes_[size_t(n)].end});
    std::reverse(out.begin() + std::ptrdiff_t(first), out.end());
    int64_t previous_end = last_end_;
    for (size_t i = first; i < out.size(); ++i) {
      const int64_t next = i + 1 < out.size() ? out[i + 1].start : next_start;
      out[i].start = std::max(out[i].start, previous_end + 1);
      out[i].end = std::max(out[i].start, std::min(out[i].end, next - 1));
      previous_end = out[i].end;
    }
  }

  void hand_out(int32_t node, int64_t next_start = INT64_MAX) {
    if (node == handed_) return;
    path(node, settled_, next_start);
    handed_ = node;
    last_end_ = settled_.back().end;
  }

  // Keeps the nodes between handed_ and the beams, renumbered in their old
  // order (so ties between keys still break the same way); handed_ becomes
  // node 0. A parent is always older than its children.
  void compact() {
    std::vector<int32_t> renumber(nodes_.size(), -1);
    for (const Beam& b : beams_)
      for (int32_t n = b.node; n != handed_ && renumber[size_t(n)] < 0; n = nodes_[size_t(n)].parent)
        renumber[size_t(n)] = 0;
    renumber[size_t(handed_)] = 0;
    std::vector<Node> kept;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (renumber[i] < 0) continue;
      renumber[i] = int32_t(kept.size());
      Node n = nodes_[i];
      n.parent = int32_t(i) == handed_ ? -1 : renumber[size_t(n.parent)];
      kept.push_back(n);
    }
    nodes_.swap(kept);
    children_.clear();
    for (size_t i = 1; i < nodes_.size(); ++i) children_.emplace(key(nodes_[i].parent, nodes_[i].label), int32_t(i));
    for (Beam& b : beams_) b.node = renumber[size_t(b.node)];
    handed_ = 0;
    compact_at_ = std::max<int64_t>(4096, 2 * int64_t(nodes_.size()));
  }

  int64_t classes_;
  CtcBeamOptions options_;
  int64_t t_ = 0, compact_at_ = 4096;
  bool finished_ = false;
  std::vector<Node> nodes_;                       // [0] the root, or the last settled token after a compaction
  std::unordered_map<uint64_t, int32_t> children_;  // (parent, label) -> node
  std::vector<Beam> beams_;                       // best first
  int32_t handed_ = 0;                            // the last node handed out
  int64_t last_end_ = -1;                         // its token's end
  std::vector<CtcToken> settled_;
  std::vector<double> logp_;
  std::vector<Candidate> candidates_;
  std::unordered_map<uint64_t, int32_t> index_;  // candidate key -> candidates_ index
  std::vector<int32_t> order_;
};

}  // namespace

std::unique_ptr<CtcDecoder> make_prefix_beam_decoder(int64_t classes, const CtcBeamOptions& options) {
  return std::make_unique<PrefixBeamDecoder>(classes, options);
}

}  // namespace lt
