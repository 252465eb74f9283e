// The limits that are counts: requests per second per client address (a
// token bucket each, bursts of twice the rate), and slots of a bounded kind
// (connections, live streams) taken and given back.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace lt::server {

class RateLimiter {
 public:
  // rate: requests per second per address; 0: no limit.
  explicit RateLimiter(double rate);
  // Takes a token of the address's bucket; false when it is empty.
  bool allow(const std::string& address);
  // Seconds until the address's next token (for Retry-After).
  double wait_seconds() const { return rate_ > 0 ? 1.0 / rate_ : 0; }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  double rate_, burst_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::chrono::steady_clock::time_point last_sweep_;
};

// At most `limit` held at once.
class Slots {
 public:
  explicit Slots(int64_t limit) : limit_(limit) {}
  bool try_take();
  void give_back() { held_.fetch_sub(1); }
  int64_t held() const { return held_.load(); }
  int64_t limit() const { return limit_; }

 private:
  int64_t limit_;
  std::atomic<int64_t> held_{0};
};

// A slot held for the life of this object (moved, not copied).
class SlotHold {
 public:
  SlotHold() = default;
  explicit SlotHold(Slots* s) : slots_(s) {}
  SlotHold(SlotHold&& o) noexcept : slots_(o.slots_) { o.slots_ = nullptr; }
  SlotHold& operator=(SlotHold&& o) noexcept {
    if (this != &o) {
      release();
      slots_ = o.slots_;
      o.slots_ = nullptr;
    }
    return *this;
  }
  ~SlotHold() { release(); }
  void release() {
    if (slots_) slots_->give_back();
    slots_ = nullptr;
  }

 private:
  Slots* slots_ = nullptr;
};

}  // namespace lt::server
