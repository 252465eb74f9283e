// Prometheus' text exposition format by hand: counters, gauges and
// histograms with cumulative buckets (metrics.h).
#include "metrics.h"

#include <cmath>
#include <cstdio>
#include <tuple>

namespace lt::server {

namespace {
std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string header(const std::string& name, const char* type, const std::string& help) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}
constexpr double kRecentSeconds = 60;
}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out = header(name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + (i < bounds_.size() ? number(bounds_[i]) : "+Inf") + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_sum " + number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return out;
}

Metrics::Metrics()
    : stream_batch_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}),
      stream_step_seconds_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      image_batch_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      image_step_seconds_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25}),
      file_seconds_({0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}) {}

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::rejected(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejected_[reason];
}

void Metrics::stream_step(int64_t stepped, double seconds, double audio_seconds) {
  stream_batch_.observe(double(stepped));
  stream_step_seconds_.observe(seconds);
  std::lock_guard<std::mutex> lock(mutex_);
  stream_audio_ += audio_seconds;
  stream_compute_ += seconds;
  const auto now = std::chrono::steady_clock::now();
  recent_.emplace_back(now, seconds, audio_seconds);
  while (!recent_.empty() && std::chrono::duration<double>(now - std::get<0>(recent_.front())).count() > kRecentSeconds)
    recent_.pop_front();
}

void Metrics::image_step(int64_t jobs, double seconds) {
  image_batch_.observe(double(jobs));
  image_step_seconds_.observe(seconds);
}

void Metrics::images_done(int64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  images_ += uint64_t(count);
}

void Metrics::file_transcribed(double audio_seconds, double seconds) {
  file_seconds_.observe(seconds);
  std::lock_guard<std::mutex> lock(mutex_);
  file_audio_ += audio_seconds;
  file_compute_ += seconds;
  ++files_;
}

std::string Metrics::render() const {
  std::string out;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    out += header(name, "gauge", help) + name + " " + number(v) + "\n";
  };
  auto counter = [&](const std::string& name, const std::string& help, double v) {
    out += header(name, "counter", help) + name + " " + number(v) + "\n";
  };
  gauge("lt_server_connections", "Open client connections.", double(connections.load()));
  counter("lt_server_connections_total", "Client connections accepted.", double(connections_total.load()));
  gauge("lt_server_live_streams", "Live /asr streams.", double(live_streams.load()));
  gauge("lt_server_image_jobs", "Images being drawn.", double(image_jobs.load()));
  out += stream_batch_.render("lt_server_stream_batch_size", "Streams that consumed audio in one batched step.");
  out += stream_step_seconds_.render("lt_server_stream_step_seconds", "Wall time of one batched step of the streams.");
  out += image_batch_.render("lt_server_image_batch_size", "Images drawn in one batched step.");
  out += image_step_seconds_.render("lt_server_image_step_seconds", "Wall time of one batched image step.");
  out += file_seconds_.render("lt_server_file_transcription_seconds", "Wall time of one file transcription.");
  std::lock_guard<std::mutex> lock(mutex_);
  out += header("lt_server_audio_seconds_total", "counter", "Seconds of audio recognised.");
  out += "lt_server_audio_seconds_total{kind=\"stream\"} " + number(stream_audio_) + "\n";
  out += "lt_server_audio_seconds_total{kind=\"file\"} " + number(file_audio_) + "\n";
  out += header("lt_server_compute_seconds_total", "counter", "Seconds spent recognising.");
  out += "lt_server_compute_seconds_total{kind=\"stream\"} " + number(stream_compute_) + "\n";
  out += "lt_server_compute_seconds_total{kind=\"file\"} " + number(file_compute_) + "\n";
  double recent_compute = 0, recent_audio = 0;
  for (const auto& [t, c, a] : recent_) {
    recent_compute += c;
    recent_audio += a;
  }
  out += header("lt_server_real_time_factor", "gauge",
                "Compute seconds per second of audio: streams over the last minute, files since the start.");
  out += "lt_server_real_time_factor{kind=\"stream\"} " + number(recent_audio > 0 ? recent_compute / recent_audio : 0) +
         "\n";
  out += "lt_server_real_time_factor{kind=\"file\"} " + number(file_audio_ > 0 ? file_compute_ / file_audio_ : 0) + "\n";
  counter("lt_server_file_transcriptions_total", "Files transcribed.", double(files_));
  counter("lt_server_images_total", "Images drawn.", double(images_));
  out += header("lt_server_requests_total", "counter", "HTTP requests and WebSocket upgrades answered, by status.");
  for (const auto& [key, n] : requests_)
    out += "lt_server_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  out += header("lt_server_rejected_total", "counter", "Requests, frames and connections refused, by reason.");
  for (const auto& [reason, n] : rejected_)
    out += "lt_server_rejected_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  return out;
}

}  // namespace lt::server
