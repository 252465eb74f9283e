// Where recognition starts afresh (RecognizerOptions::pause_seconds): a
// pause is `pause` positions in a row whose likeliest class is the blank.
// The causal encoder finds them online, the recognizer of a model that sees
// both sides in its first pass; both through this, so they cut alike.
#pragma once
#include <algorithm>
#include <cstdint>

namespace lt::speech {

class PauseFinder {
 public:
  explicit PauseFinder(int64_t pause) : pause_(pause) {}  // 0: never
  // Takes the next position's logits [classes]: true when they complete a
  // pause, and the next one starts counting after it.
  bool ends_pause(const float* row, int64_t classes) {
    blanks_ = std::max_element(row, row + classes) == row ? blanks_ + 1 : 0;
    if (pause_ == 0 || blanks_ < pause_) return false;
    blanks_ = 0;
    return true;
  }
  int64_t pause() const { return pause_; }

 private:
  int64_t pause_;
  int64_t blanks_ = 0;  // the current run of blank positions
};

}  // namespace lt::speech
