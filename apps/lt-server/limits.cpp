// Token buckets per client address and bounded slots (limits.h).
#include "limits.h"

#include <algorithm>

namespace lt::server {

namespace {
constexpr double kSweepSeconds = 60;  // full buckets older than this are forgotten
}

RateLimiter::RateLimiter(double rate)
    : rate_(rate), burst_(std::max(1.0, 2 * rate)), last_sweep_(std::chrono::steady_clock::now()) {}

bool RateLimiter::allow(const std::string& address) {
  if (rate_ <= 0) return true;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::chrono::duration<double>(now - last_sweep_).count() > kSweepSeconds) {
    // An address whose bucket would be full again holds nothing worth keeping.
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      const double idle = std::chrono::duration<double>(now - it->second.last).count();
      it = it->second.tokens + idle * rate_ >= burst_ ? buckets_.erase(it) : std::next(it);
    }
    last_sweep_ = now;
  }
  auto [it, fresh] = buckets_.try_emplace(address, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh) {
    b.tokens = std::min(burst_, b.tokens + std::chrono::duration<double>(now - b.last).count() * rate_);
    b.last = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

bool Slots::try_take() {
  int64_t held = held_.load();
  do {
    if (limit_ > 0 && held >= limit_) return false;
  } while (!held_.compare_exchange_weak(held, held + 1));
  return true;
}

}  // namespace lt::server
