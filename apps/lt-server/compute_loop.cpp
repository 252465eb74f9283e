// The compute thread (compute_loop.h).
#include "compute_loop.h"

#include <algorithm>

#include "transcript_tokens.h"

namespace lt::server {

using Clock = std::chrono::steady_clock;

ComputeLoop::ComputeLoop(lt_recognizer* recognizer, lt_model* image_model, std::chrono::milliseconds step_interval,
                         Metrics& metrics)
    : recognizer_(recognizer), image_model_(image_model), interval_(step_interval), metrics_(metrics) {
  if (lt_stream_group_new(recognizer_, &group_) != LT_OK) throw std::runtime_error(lt_last_error());
  if (lt_image_batch_new(image_model_, &images_) != LT_OK) {
    const std::string error = lt_last_error();
    lt_stream_group_free(group_);
    throw std::runtime_error(error);
  }
  thread_ = std::thread([this] { run(); });
}

void ComputeLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Image requests hold their sessions (through their answers): they go now,
  // while the sessions' io_context still exists.
  for (Running& r : running_)
    for (lt_image_job* j : r.jobs) lt_image_job_free(j);
  running_.clear();
  // Deliveries hold their sessions' strands, which must not outlive the
  // io_context either.
  for (auto& [id, l] : live_) l.deliver = nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  image_queue_.clear();
  pending_.clear();
}

ComputeLoop::~ComputeLoop() {
  stop();
  for (auto& [id, l] : live_) lt_stream_free(l.stream);
  lt_image_batch_free(images_);
  lt_stream_group_free(group_);
}

uint64_t ComputeLoop::open_stream(double sample_rate, Deliver deliver) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  Pending& p = pending_[id];
  p.fresh = true;
  p.sample_rate = sample_rate;
  p.deliver = std::move(deliver);
  wake_.notify_one();
  return id;
}

void ComputeLoop::push_audio(uint64_t id, std::vector<float> samples, bool answered) {
  std::lock_guard<std::mutex> lock(mutex_);
  Pending& p = pending_[id];
  if (p.audio.empty())
    p.audio = std::move(samples);
  else
    p.audio.insert(p.audio.end(), samples.begin(), samples.end());
  p.answers += answered ? 1 : 0;
  wake_.notify_one();
}

void ComputeLoop::push_reset(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++pending_[id].answers;
  wake_.notify_one();
}

void ComputeLoop::end_stream(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_[id].end = true;
  wake_.notify_one();
}

void ComputeLoop::close_stream(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_[id].closed = true;
  wake_.notify_one();
}

void ComputeLoop::end_all_streams() {
  std::lock_guard<std::mutex> lock(mutex_);
  end_all_ = true;
  wake_.notify_one();
}

void ComputeLoop::add_images(std::shared_ptr<ImageWork> work) {
  std::lock_guard<std::mutex> lock(mutex_);
  image_queue_.push_back(std::move(work));
  wake_.notify_one();
}

void ComputeLoop::run() {
  for (;;) {
    std::unordered_map<uint64_t, Pending> work;
    std::vector<std::shared_ptr<ImageWork>> added;
    bool streams_due = false, end_all = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        if (stop_) return;
        const bool images = !running_.empty() || !image_queue_.empty();
        const bool streams = !pending_.empty() || unsettled_ || end_all_;
        const Clock::time_point due = last_step_ + interval_;
        if (streams && Clock::now() >= due) {
          streams_due = true;
          break;
        }
        if (images) break;
        if (streams)
          wake_.wait_until(lock, due);
        else
          wake_.wait(lock);
      }
      if (streams_due) {
        work.swap(pending_);
        end_all = end_all_;
      }
      added.swap(image_queue_);
    }
    if (streams_due) {
      last_step_ = Clock::now();
      step_streams(std::move(work), end_all);
    }
    if (!added.empty() || !running_.empty()) step_images(std::move(added));
  }
}

void ComputeLoop::fail_stream(uint64_t id, Live& live, const std::string& error) {
  StreamUpdate u;
  u.error = error;
  live.deliver(std::move(u));
  lt_stream_free(live.stream);
  live_.erase(id);
  metrics_.live_streams.fetch_sub(1);
}

void ComputeLoop::step_streams(std::unordered_map<uint64_t, Pending> work, bool end_all) {
  double audio_seconds = 0;
  for (auto& [id, p] : work) {
    if (p.fresh) {
      lt_stream* s = nullptr;
      if (lt_stream_group_open(group_, &s) != LT_OK || lt_stream_set_rate(s, p.sample_rate) != LT_OK) {
        StreamUpdate u;
        u.error = std::string("cannot open a stream: ") + lt_last_error();
        lt_stream_free(s);  // NULL, or one whose rate was refused
        p.deliver(std::move(u));
        continue;
      }
      live_[id] = Live{s, std::move(p.deliver), p.sample_rate};
      metrics_.live_streams.fetch_add(1);
    }
    auto it = live_.find(id);
    if (it == live_.end()) continue;  // ended or failed before this came
    Live& l = it->second;
    if (p.closed) {
      lt_stream_free(l.stream);
      live_.erase(it);
      metrics_.live_streams.fetch_sub(1);
      continue;
    }
    if (!p.audio.empty()) {
      if (lt_stream_push(l.stream, p.audio.data(), int64_t(p.audio.size())) != LT_OK) {
        fail_stream(id, l, lt_last_error());
        continue;
      }
      l.samples += int64_t(p.audio.size());
      audio_seconds += double(p.audio.size()) / l.sample_rate;
    }
    l.answers += p.answers;
    if (p.end && !l.finishing) {
      if (lt_stream_finish(l.stream) != LT_OK) {
        fail_stream(id, l, lt_last_error());
        continue;
      }
      l.finishing = true;
    }
  }
  if (end_all) {
    for (auto& [id, l] : live_)
      if (!l.finishing && lt_stream_finish(l.stream) == LT_OK) l.finishing = true;
    std::lock_guard<std::mutex> lock(mutex_);
    end_all_ = false;
  }
  if (live_.empty()) {
    unsettled_ = false;
    return;
  }

  lt_stream_group_stats stats{};
  if (lt_stream_group_step(group_, &stats) != LT_OK) {
    const std::string error = std::string("recognition failed: ") + lt_last_error();
    while (!live_.empty()) fail_stream(live_.begin()->first, live_.begin()->second, error);
    unsettled_ = false;
    return;
  }
  if (stats.stepped > 0) metrics_.stream_step(stats.stepped, stats.seconds, audio_seconds);

  // Every live stream's news: a stream that got nothing new settles nothing
  // new, but one that is finishing may settle now.
  unsettled_ = false;
  for (auto it = live_.begin(); it != live_.end();) {
    Live& l = it->second;
    const bool touched = work.count(it->first) > 0 || l.finishing;
    if (!touched) {
      ++it;
      continue;
    }
    lt_transcript* settled = nullptr;
    lt_transcript* tail = nullptr;
    if (lt_stream_take_settled(l.stream, &settled) != LT_OK || lt_stream_tentative(l.stream, &tail) != LT_OK) {
      lt_transcript_free(settled);
      const uint64_t id = it->first;
      ++it;
      fail_stream(id, live_.at(id), lt_last_error());
      continue;
    }
    StreamUpdate u;
    u.results.settled_words = tokens_of(settled, true);
    u.results.settled_phones = tokens_of(settled, false);
    u.results.tentative_words = tokens_of(tail, true);
    u.results.tentative_phones = tokens_of(tail, false);
    u.results.decoded_seconds = double(l.samples) / l.sample_rate;
    lt_transcript_free(settled);
    lt_transcript_free(tail);
    u.answers = l.answers;
    l.answers = 0;
    u.final = l.finishing && lt_stream_done(l.stream);
    if (l.finishing && !u.final) unsettled_ = true;
    if (u.answers > 0 || u.final || !u.results.settled_phones.empty() || !u.results.settled_words.empty())
      l.deliver(u);
    if (u.final) {
      lt_stream_free(l.stream);
      it = live_.erase(it);
      metrics_.live_streams.fetch_sub(1);
    } else {
      ++it;
    }
  }
}

void ComputeLoop::step_images(std::vector<std::shared_ptr<ImageWork>> added) {
  for (std::shared_ptr<ImageWork>& w : added) {
    Running r;
    r.work = w;
    std::string error;
    for (const ImageItem& item : w->items) {
      lt_image_job* job = nullptr;
      const bool completion = !item.values.empty();
      if (lt_image_batch_add(images_, item.seed, completion ? item.values.data() : nullptr,
                             completion ? item.known.data() : nullptr, &job) != LT_OK) {
        error = lt_last_error();
        break;
      }
      r.jobs.push_back(job);
      r.sent.push_back(0);
    }
    if (!error.empty()) {
      for (lt_image_job* j : r.jobs) lt_image_job_free(j);
      w->done({}, error);
      continue;
    }
    metrics_.image_jobs.fetch_add(int64_t(r.jobs.size()));
    running_.push_back(std::move(r));
  }
  auto drop = [&](Running& r) {
    for (lt_image_job* j : r.jobs) lt_image_job_free(j);
    metrics_.image_jobs.fetch_sub(int64_t(r.jobs.size()));
  };
  int64_t unfinished = 0;
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->work->cancelled.load()) {
      drop(*it);
      it = running_.erase(it);
      continue;
    }
    for (lt_image_job* j : it->jobs) unfinished += lt_image_job_done(j) ? 0 : 1;
    ++it;
  }
  if (unfinished > 0) {
    const Clock::time_point t0 = Clock::now();
    if (lt_image_batch_step(images_, nullptr) != LT_OK) {
      const std::string error = std::string("image sampling failed: ") + lt_last_error();
      for (Running& r : running_) {
        drop(r);
        r.work->done({}, error);
      }
      running_.clear();
      return;
    }
    metrics_.image_step(unfinished, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  for (auto it = running_.begin(); it != running_.end();) {
    Running& r = *it;
    bool all_done = true;
    std::vector<DecidedRun> runs;
    for (size_t i = 0; i < r.jobs.size(); ++i) {
      const int64_t decided = lt_image_job_decided(r.jobs[i]);
      if (r.work->progress && decided > r.sent[i]) {
        const uint8_t* px = lt_image_job_pixels(r.jobs[i]);
        runs.push_back({int64_t(i), r.sent[i], std::vector<uint8_t>(px + r.sent[i], px + decided)});
      }
      r.sent[i] = decided;
      all_done = all_done && lt_image_job_done(r.jobs[i]);
    }
    if (!runs.empty()) r.work->progress(std::move(runs));
    if (!all_done) {
      ++it;
      continue;
    }
    std::vector<std::vector<uint8_t>> pixels;
    for (lt_image_job* j : r.jobs) {
      const uint8_t* px = lt_image_job_pixels(j);
      pixels.emplace_back(px, px + lt_image_job_decided(j));
    }
    metrics_.images_done(int64_t(r.jobs.size()));
    drop(r);
    r.work->done(std::move(pixels), "");
    it = running_.erase(it);
  }
}

}  // namespace lt::server
