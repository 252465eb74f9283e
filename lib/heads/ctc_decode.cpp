// CTC decoding: the greedy decoder (best class per frame), the factory that
// picks it or prefix beam search (ctc_prefix_beam.cpp), and whole utterances.
#include <algorithm>

#include "common/error.h"
#include "heads/ctc.h"
#include "heads/ctc_decoders.h"

namespace lt {

namespace {

// A token is settled when its run of frames ends: no later frame extends it.
class GreedyDecoder final : public CtcDecoder {
 public:
  explicit GreedyDecoder(int64_t classes) : classes_(classes) {}
  void push(const float* row) override {
    const int32_t best = int32_t(std::max_element(row, row + classes_) - row);
    if (best != previous_ && open_) {
      settled_.push_back(current_);
      open_ = false;
    }
    if (best != 0 && best != previous_) {
      current_ = CtcToken{best, t_, t_};
      open_ = true;
    } else if (open_) {
      current_.end = t_;
    }
    previous_ = best;
    ++t_;
  }
  void take_settled(std::vector<CtcToken>& out) override {
    out.insert(out.end(), settled_.begin(), settled_.end());
    settled_.clear();
  }
  void finish() override {
    if (open_) settled_.push_back(current_);
    open_ = false;
  }
  std::vector<CtcToken> tentative() const override {
    return open_ ? std::vector<CtcToken>{current_} : std::vector<CtcToken>{};
  }

 private:
  int64_t classes_, t_ = 0;
  int32_t previous_ = 0;  // the blank: a first label is a new token
  bool open_ = false;
  CtcToken current_;
  std::vector<CtcToken> settled_;
};

}  // namespace

std::vector<int32_t> labels_of(const std::vector<CtcToken>& tokens) {
  std::vector<int32_t> out;
  out.reserve(tokens.size());
  for (const CtcToken& t : tokens) out.push_back(t.label);
  return out;
}

std::unique_ptr<CtcDecoder> make_ctc_decoder(int64_t classes, const CtcBeamOptions& options) {
  check(classes >= 2, "CTC decoding needs the blank and a label");
  check(options.beam >= 1, "CTC beam width must be >= 1, is " + std::to_string(options.beam));
  if (options.beam == 1) return std::make_unique<GreedyDecoder>(classes);
  return make_prefix_beam_decoder(classes, options);
}

std::vector<CtcToken> ctc_decode(const float* logits, int64_t frames, int64_t classes, const CtcBeamOptions& options) {
  check(frames >= 0, "CTC decoding: frames must be >= 0");
  std::unique_ptr<CtcDecoder> decoder = make_ctc_decoder(classes, options);
  for (int64_t t = 0; t < frames; ++t) decoder->push(logits + t * classes);
  decoder->finish();
  std::vector<CtcToken> out;
  decoder->take_settled(out);
  return out;
}

}  // namespace lt
