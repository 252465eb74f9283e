// What /metrics reports, in Prometheus' text format (version 0.0.4):
// connections, live streams, the streams and seconds of each batched step,
// audio seconds and the real-time factor of streams and files, images, and
// requests by endpoint and status, rejections by reason. Updated from every
// thread; read whole by render().
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace lt::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // The _bucket, _sum and _count lines of `name`.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // one per bound, then +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  std::atomic<int64_t> connections{0};      // open now
  std::atomic<uint64_t> connections_total{0};
  std::atomic<int64_t> live_streams{0};     // /asr streams open now
  std::atomic<int64_t> image_jobs{0};       // images being drawn now

  void request(const std::string& endpoint, int status);
  void rejected(const std::string& reason);
  // One batched step of the live streams: how many consumed audio, its wall
  // time, and the seconds of audio it decoded.
  void stream_step(int64_t stepped, double seconds, double audio_seconds);
  void image_step(int64_t jobs, double seconds);
  void images_done(int64_t count);
  void file_transcribed(double audio_seconds, double seconds);

  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> rejected_;
  double stream_audio_ = 0, stream_compute_ = 0, file_audio_ = 0, file_compute_ = 0;
  uint64_t files_ = 0, images_ = 0;
  // The last minute of stream steps (time, compute seconds, audio seconds),
  // for a real-time factor that says how the server does now.
  std::deque<std::tuple<std::chrono::steady_clock::time_point, double, double>> recent_;
  Histogram stream_batch_, stream_step_seconds_, image_batch_, image_step_seconds_, file_seconds_;
};

}  // namespace lt::server
