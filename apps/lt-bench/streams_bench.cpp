// lt-bench streams: many live speech streams at once, as a server holds
// them. N streams start at random times over --arrival seconds and replay
// recordings at real-time pace in pieces of --chunk-ms; a compute thread
// decodes them while the pieces arrive, three ways:
//   batched:   one stream group (lt_stream_group_step: one batched encoder
//              step per position over every stream with audio);
//   alone:     the same process stepping each stream on its own (a group of
//              one per stream, stepped in turn);
//   processes: N `lt-asr --stream` processes, each fed its audio through a pipe;
//   saturated: one stream group whose N streams are each pushed a piece
//              before every step, as fast as the steps go: throughput
//              apart from pacing and lag, in audio seconds a second.
// A settled phone's lag is the time from the push of the piece holding its
// last sample to the step that settled it (the decoder's --max-delay
// included); a process's is from its last audio to its final output. A mode
// keeps real time when the p95 lag is within --lag-bound-ms and every stream
// gave its final result within it of its last audio. --find searches for the
// largest N that does. --images N times N single-image requests arriving at
// random times through a continuous image batch (lt_image_batch), against
// the same requests sampled one after another.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "audio/audio_file.h"
#include "backend/device.h"
#include "benchmarks.h"
#include "common/error.h"
#include "lt.h"
#include "shipped_model.h"

namespace lt::bench {
namespace {

using Seconds = std::chrono::duration<double>;
double now_s() { return Seconds(Clock::now().time_since_epoch()).count(); }

// A call of lt.h that must succeed. Its error is read once the call has
// returned: an argument beside the call may be evaluated before it.
void ok(lt_status status) {
  if (status != LT_OK) throw Error(lt_last_error());
}

double rss_mb_of(const std::string& status_path) {
  std::ifstream in(status_path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}
double rss_mb() { return rss_mb_of("/proc/self/status"); }

// The recordings streams replay: --audio's, or sentences spoken by espeak-ng.
std::vector<std::vector<float>> recordings(const StreamsBenchOptions& o) {
  std::vector<std::string> paths = o.audio;
  std::string dir;
  if (paths.empty()) {
    char tmpl[] = "/tmp/lt-bench-streams-XXXXXX";
    check(mkdtemp(tmpl) != nullptr, "cannot make a temporary folder for the spoken sentences");
    dir = tmpl;
    const char* sentences[] = {"the quick brown fox jumps over the lazy dog",
                               "please call stella and ask her to bring these things with her from the store",
                               "six spoons of fresh snow peas five thick slabs of blue cheese",
                               "we also need a small plastic snake and a big toy frog for the kids",
                               "she can scoop these things into three red bags",
                               "open the door and turn the lights off in the kitchen",
                               "seven three nine two one zero four eight five six",
                               "the weather will be cloudy with a chance of rain tomorrow"};
    const char* voices[] = {"en-us", "en-us+f3", "en-us+m3", "en-gb"};
    for (size_t i = 0; i < 8; ++i) {
      const std::string wav = dir + "/" + std::to_string(i) + ".wav";
      const std::string cmd = std::string("espeak-ng -v ") + voices[i % 4] + " -w " + wav + " '" + sentences[i] + "'";
      check(std::system(cmd.c_str()) == 0, "espeak-ng could not speak the test sentences (give recordings with --audio)");
      paths.push_back(wav);
    }
  }
  std::vector<std::vector<float>> out;
  for (const std::string& p : paths) out.push_back(read_audio(p));
  if (!dir.empty()) std::system(("rm -rf '" + dir + "'").c_str());
  return out;
}

// One stream's audio, --seconds of its recording looped, and its schedule.
struct Plan {
  const std::vector<float>* recording = nullptr;
  double start = 0;  // seconds after the run starts
  int64_t pieces = 0;
  // Samples [first, first + n) of the recording played in a loop, into out:
  // spans copied whole, since this stands for clients on other machines and
  // its cost should not come out of the compute the run measures.
  void samples(int64_t first, int64_t n, float* out) const {
    const int64_t size = int64_t(recording->size());
    for (int64_t at = first % size; n > 0; at = 0) {
      const int64_t k = std::min(n, size - at);
      std::copy_n(recording->data() + at, k, out);
      out += k;
      n -= k;
    }
  }
};

std::vector<Plan> plans(const StreamsBenchOptions& o, const std::vector<std::vector<float>>& recs, int64_t n,
                        int64_t piece) {
  std::mt19937_64 gen(uint64_t(n) * 7919 + 1);
  std::uniform_real_distribution<double> start(0, o.arrival);
  std::vector<Plan> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].recording = &recs[i % recs.size()];
    out[i].start = start(gen);
    out[i].pieces = (int64_t(o.seconds * kSpeechSampleRate) + piece - 1) / piece;
  }
  return out;
}

struct Result {
  std::vector<double> lags_ms;    // of every settled phone
  std::vector<double> finish_ms;  // of every stream: its final result after its last audio
  double rss_per_stream_mb = 0;
  double step_ms = 0, streams_per_step = 0, positions_per_step = 0;
  double encoder_share = 0;  // of the steps' time, the batched encoder's
  int64_t steps = 0;
  bool timed_out = false;
};

// The pieces of every stream pushed at their times (pusher), while `work`
// runs on this thread until every stream is done. push(i, k, samples, n) is
// piece k of stream i; finish(i) its end. sample_rss() is called once, when
// every stream should be live.
template <class Push, class Finish, class Work>
void drive(const StreamsBenchOptions& o, const std::vector<Plan>& ps, int64_t piece, double t0, Push push,
           Finish finish, Work work, std::vector<std::vector<double>>& pushed_at, std::vector<double>& finished_at,
           const std::function<void()>& sample_rss) {
  std::atomic<bool> stop{false};
  std::thread pusher([&] {
    std::vector<int64_t> next(ps.size(), 0);
    std::vector<float> buf(static_cast<size_t>(piece));
    bool sampled = false;
    const double sample_at = o.arrival + (o.seconds - o.arrival) / 2;
    for (size_t left = ps.size(); left > 0 && !stop;) {
      const double t = now_s() - t0;
      double wake = 1e30;
      for (size_t i = 0; i < ps.size(); ++i) {
        const Plan& p = ps[i];
        while (next[i] <= p.pieces) {
          const double due = p.start + double(next[i] + 1) * o.chunk_ms / 1000;
          if (due > t) {
            wake = std::min(wake, due);
            break;
          }
          if (next[i] == p.pieces) {
            finish(i);
            finished_at[i] = now_s();
            --left;
          } else {
            p.samples(next[i] * piece, piece, buf.data());
            push(i, next[i], buf.data(), piece);
            pushed_at[i][size_t(next[i])] = now_s();
          }
          ++next[i];
        }
      }
      if (!sampled && t >= sample_at && sample_at > 0) {
        sample_rss();
        sampled = true;
      }
      const double sleep = std::min(wake, sampled ? wake : sample_at) - (now_s() - t0);
      if (sleep > 0) std::this_thread::sleep_for(Seconds(std::min(sleep, 0.005)));
    }
  });
  work(stop);
  stop = true;
  pusher.join();
}

// lag of a phone ending at `end_s` of stream i's audio, taken at `t`.
double lag_ms(const std::vector<double>& pushed, double end_s, int64_t piece, double t) {
  const int64_t last = std::max<int64_t>(0, int64_t(std::ceil(end_s * kSpeechSampleRate)) - 1);
  const size_t k = std::min(pushed.size() - 1, size_t(last / piece));
  return 1e3 * (t - pushed[k]);
}

Result run_in_process(const StreamsBenchOptions& o, lt_recognizer* r, const std::vector<Plan>& ps, int64_t piece,
                      bool batched) {
  const size_t n = ps.size();
  Result res;
  std::vector<lt_stream_group*> groups(batched ? 1 : n, nullptr);
  for (auto& g : groups) ok(lt_stream_group_new(r, &g));
  std::vector<lt_stream*> streams(n, nullptr);
  for (size_t i = 0; i < n; ++i) ok(lt_stream_group_open(groups[batched ? 0 : i], &streams[i]));
  std::vector<std::vector<double>> pushed_at(n);
  for (size_t i = 0; i < n; ++i) pushed_at[i].assign(size_t(ps[i].pieces), 0);
  std::vector<double> finished_at(n, 0), done_at(n, 0);
  const double base = rss_mb();
  const double t0 = now_s();
  std::vector<double> step_ms;
  double stepped = 0, positions = 0, encoder_s = 0;
  // Pieces the feeding thread gave each stream, and whether it has ended: as
  // lt-server's loop, results are taken only from streams a step had audio
  // for (counted before it) and from ended ones until they are done, since
  // no other can have settled anything.
  std::vector<std::atomic<int64_t>> fed(n);
  std::vector<std::atomic<bool>> ended(n);
  std::vector<int64_t> seen(n, 0), taken(n, 0);
  auto take = [&](size_t i, double t) {
    lt_transcript* tr = nullptr;
    ok(lt_stream_take_settled(streams[i], &tr));
    for (int64_t k = 0; k < lt_transcript_phones(tr); ++k)
      res.lags_ms.push_back(lag_ms(pushed_at[i], lt_transcript_phone(tr, k).end, piece, t));
    lt_transcript_free(tr);
    if (done_at[i] == 0 && lt_stream_done(streams[i])) done_at[i] = t;
  };
  auto work = [&](std::atomic<bool>&) {
    const double give_up = o.arrival + o.seconds + 30;
    for (size_t done = 0; done < n;) {
      if (now_s() - t0 > give_up) {
        res.timed_out = true;
        break;
      }
      const double started = now_s();
      int64_t moved = 0;
      for (size_t i = 0; i < n; ++i) seen[i] = fed[i].load(std::memory_order_acquire);
      for (lt_stream_group* g : groups) {
        lt_stream_group_stats s{};
        ok(lt_stream_group_step(g, &s));
        moved += s.positions;
        if (s.positions > 0) {
          step_ms.push_back(1e3 * s.seconds);
          encoder_s += s.encoder_seconds;
          stepped += double(s.stepped);
          positions += double(s.positions);
        }
      }
      const double t = now_s();
      done = 0;
      for (size_t i = 0; i < n; ++i) {
        if (done_at[i] == 0 && (seen[i] != taken[i] || ended[i].load(std::memory_order_acquire))) {
          taken[i] = seen[i];
          take(i, t);
        }
        done += done_at[i] > 0;
      }
      // A step at most every --interval-ms, as lt-server's loop: audio that
      // arrives meanwhile joins the next step's batch. Only a step that found
      // nothing waits longer (2 ms), so a loaded loop never idles past its interval.
      const double idle = o.interval_ms / 1e3 - (now_s() - started);
      if (moved == 0 || idle > 0) std::this_thread::sleep_for(Seconds(moved == 0 ? std::max(idle, 0.002) : idle));
    }
  };
  drive(o, ps, piece, t0,
        [&](size_t i, int64_t, const float* x, int64_t m) {
          lt_stream_push(streams[i], x, m);
          fed[i].fetch_add(1, std::memory_order_release);
        },
        [&](size_t i) {
          lt_stream_finish(streams[i]);
          ended[i].store(true, std::memory_order_release);
        },
        work, pushed_at, finished_at,
        [&] { res.rss_per_stream_mb = (rss_mb() - base) / double(n); });
  for (size_t i = 0; i < n; ++i)
    res.finish_ms.push_back(done_at[i] > 0 ? 1e3 * (done_at[i] - finished_at[i]) : 1e9);
  const Stats s = Stats::of(step_ms);
  res.step_ms = s.mean;
  res.steps = int64_t(step_ms.size());
  res.streams_per_step = step_ms.empty() ? 0 : stepped / double(step_ms.size());
  res.positions_per_step = step_ms.empty() ? 0 : positions / double(step_ms.size());
  res.encoder_share = s.mean > 0 ? 1e3 * encoder_s / (s.mean * double(step_ms.size())) : 0;
  for (lt_stream* s : streams) lt_stream_free(s);
  for (lt_stream_group* g : groups) lt_stream_group_free(g);
  return res;
}

// N lt-asr --stream processes on one thread each, fed raw PCM through pipes.
Result run_processes(const StreamsBenchOptions& o, const std::string& model, const std::vector<Plan>& ps, int64_t piece) {
  const size_t n = ps.size();
  Result res;
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  check(len > 0, "cannot find lt-bench's own path");
  self[len] = 0;
  const std::string asr = std::string(self).substr(0, std::string(self).rfind('/')) + "/lt-asr";
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<pid_t> pids(n);
  std::vector<int> in(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    int a[2], b[2];
    check(pipe(a) == 0 && pipe(b) == 0, "cannot make pipes for lt-asr");
    const pid_t pid = fork();
    check(pid >= 0, "cannot start lt-asr");
    if (pid == 0) {
      dup2(a[0], 0);
      dup2(b[1], 1);
      for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
      const std::string m = model;
      execl(asr.c_str(), asr.c_str(), "--stream", "--raw-rate", "16000", "-t", "1", "-q", "-m", m.c_str(), "-", nullptr);
      _exit(127);
    }
    close(a[0]);
    close(b[1]);
    pids[i] = pid, in[i] = a[1], out[i] = b[0];
  }
  std::vector<std::vector<double>> pushed_at(n);
  for (size_t i = 0; i < n; ++i) pushed_at[i].assign(size_t(ps[i].pieces), 0);
  std::vector<double> finished_at(n, 0), done_at(n, 0);
  const double t0 = now_s();
  auto work = [&](std::atomic<bool>&) {
    // Each process's output read to its end: the end is its final result.
    char buf[4096];
    for (size_t done = 0; done < n;) {
      if (now_s() - t0 > o.arrival + o.seconds + 30) {
        res.timed_out = true;
        break;
      }
      fd_set fds;
      FD_ZERO(&fds);
      int top = -1;
      for (size_t i = 0; i < n; ++i)
        if (done_at[i] == 0) FD_SET(out[i], &fds), top = std::max(top, out[i]);
      timeval tv{0, 20000};
      if (select(top + 1, &fds, nullptr, nullptr, &tv) <= 0) continue;
      for (size_t i = 0; i < n; ++i)
        if (done_at[i] == 0 && FD_ISSET(out[i], &fds) && read(out[i], buf, sizeof buf) <= 0) done_at[i] = now_s(), ++done;
    }
  };
  drive(o, ps, piece, t0,
        [&](size_t i, int64_t, const float* x, int64_t m) {
          std::vector<int16_t> s(static_cast<size_t>(m));
          for (int64_t k = 0; k < m; ++k) s[size_t(k)] = int16_t(std::clamp(x[k], -1.f, 1.f) * 32767);
          if (write(in[i], s.data(), size_t(m) * 2) < 0) done_at[i] = done_at[i] ? done_at[i] : now_s();
        },
        [&](size_t i) { close(in[i]); }, work, pushed_at, finished_at,
        [&] {
          double mb = 0;
          for (pid_t p : pids) mb += rss_mb_of("/proc/" + std::to_string(p) + "/status");
          res.rss_per_stream_mb = mb / double(n);
        });
  for (size_t i = 0; i < n; ++i) {
    if (done_at[i] == 0) kill(pids[i], SIGKILL);
    close(out[i]);
    waitpid(pids[i], nullptr, 0);
    res.finish_ms.push_back(done_at[i] > 0 ? 1e3 * (done_at[i] - finished_at[i]) : 1e9);
  }
  res.lags_ms = res.finish_ms;  // a process prints its phones with no times: its final result's lag stands for them
  return res;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

// N streams of one group, each pushed its next --chunk-ms before every step
// and its settled phones taken after it, for --seconds of audio a stream
// after a warm-up of 20 steps (the pool grown, every search full).
// The search's settings, which a row's figures depend on as much as on the model.
Row& decoding(Row& row, const StreamsBenchOptions& o) {
  return row.set("beam", int64_t(o.beam)).set("prune", o.prune).set("max_delay_s", o.max_delay);
}

Row run_saturated(const StreamsBenchOptions& o, lt_recognizer* r, const std::vector<Plan>& ps, int64_t piece) {
  const size_t n = ps.size();
  const double base = rss_mb();
  lt_stream_group* g = nullptr;
  ok(lt_stream_group_new(r, &g));
  std::vector<lt_stream*> streams(n, nullptr);
  for (auto& s : streams) ok(lt_stream_group_open(g, &s));
  std::vector<int64_t> at(n);
  for (size_t i = 0; i < n; ++i) at[i] = int64_t(i) * 7919;  // streams at different places of their recordings
  std::vector<float> buf(static_cast<size_t>(piece));
  const int64_t warm = 20, steps = std::max<int64_t>(1, int64_t(o.seconds * kSpeechSampleRate) / piece);
  double encoder_s = 0, t0 = 0, rss = 0;
  int64_t positions = 0;
  for (int64_t k = 0; k < warm + steps; ++k) {
    if (k == warm) {
      rss = rss_mb();
      encoder_s = 0;
      positions = 0;
      t0 = now_s();
    }
    for (size_t i = 0; i < n; ++i) {
      ps[i].samples(at[i], piece, buf.data());
      at[i] += piece;
      ok(lt_stream_push(streams[i], buf.data(), piece));
      lt_transcript* tr = nullptr;
      ok(lt_stream_take_settled(streams[i], &tr));
      lt_transcript_free(tr);
    }
    lt_stream_group_stats st{};
    ok(lt_stream_group_step(g, &st));
    encoder_s += st.encoder_seconds;
    positions += st.positions;
  }
  const double wall = now_s() - t0, audio = double(n) * double(steps * piece) / kSpeechSampleRate;
  for (lt_stream* s : streams) lt_stream_free(s);
  lt_stream_group_free(g);
  Row row = environment_row(o.device, num_threads());
  row.set("mode", std::string("saturated")).set("streams", int64_t(n)).set("realtime", audio / wall >= double(n));
  row.set("audio_s", audio).set("wall_s", wall).set("realtime_streams", audio / wall);
  row.set("positions", positions).set("positions_per_s", double(positions) / wall);
  row.set("us_per_position", positions > 0 ? 1e6 * wall / double(positions) : 0.0);
  row.set("encoder_share", encoder_s / wall).set("memory_per_stream_mb", (rss - base) / double(n));
  row.set("chunk_ms", o.chunk_ms).set("precision", o.precision());
  return decoding(row, o);
}

Row streams_row(const StreamsBenchOptions& o, const std::string& mode, int64_t n, const Result& r) {
  Row row = environment_row(o.device, num_threads());
  const double bound = o.lag_bound();
  const double p95 = percentile(r.lags_ms, 0.95), finish_max = percentile(r.finish_ms, 1.0);
  const bool realtime = !r.timed_out && !r.lags_ms.empty() && p95 <= bound && finish_max <= bound;
  double mean = 0;
  for (double x : r.lags_ms) mean += x / double(r.lags_ms.size());
  row.set("mode", mode).set("streams", n).set("realtime", realtime);
  row.set("lag_mean_ms", mean).set("lag_p95_ms", p95).set("lag_max_ms", percentile(r.lags_ms, 1.0));
  row.set("final_max_ms", finish_max).set("lag_bound_ms", bound);
  row.set("memory_per_stream_mb", r.rss_per_stream_mb);
  row.set("step_ms", r.step_ms).set("encoder_share", r.encoder_share).set("streams_per_step", r.streams_per_step).set("positions_per_step", r.positions_per_step);
  row.set("phones", int64_t(r.lags_ms.size())).set("seconds", o.seconds).set("chunk_ms", o.chunk_ms);
  row.set("precision", o.precision());
  return decoding(row, o);
}

bool realtime(const Row& row) {
  for (const auto& kv : row.fields())
    if (kv.first == "realtime") return kv.second.get<bool>();
  return false;
}

void images(const StreamsBenchOptions& o, Writer& out) {
  const std::string path = o.image_model.empty() ? app::find_shipped_model("mnist.safetensors") : o.image_model;
  lt_model* m = nullptr;
  lt_model_options mo = lt_model_default_options();
  mo.device = o.device.c_str();
  mo.precision = o.precision();
  ok(lt_model_load(path.c_str(), &mo, &m));
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> when(0, o.arrival);
  std::vector<double> arrive(static_cast<size_t>(o.images));
  for (double& a : arrive) a = when(gen);
  std::sort(arrive.begin(), arrive.end());
  for (const std::string& mode : o.modes) {
    std::vector<double> latency;
    const double t0 = now_s();
    if (mode == "batched") {
      lt_image_batch* b = nullptr;
      ok(lt_image_batch_new(m, &b));
      std::vector<lt_image_job*> jobs(arrive.size(), nullptr);
      size_t joined = 0, done = 0;
      while (done < arrive.size()) {
        const double t = now_s() - t0;
        while (joined < arrive.size() && arrive[joined] <= t)
          ok(lt_image_batch_add(b, joined, nullptr, nullptr, &jobs[joined])), ++joined;
        int64_t running = 0;
        ok(lt_image_batch_step(b, &running));
        for (size_t i = 0; i < joined; ++i)
          if (jobs[i] && lt_image_job_done(jobs[i])) {
            latency.push_back(now_s() - t0 - arrive[i]);
            lt_image_job_free(jobs[i]);
            jobs[i] = nullptr;
            ++done;
          }
        if (running == 0 && joined < arrive.size())
          std::this_thread::sleep_for(Seconds(std::max(0.0, arrive[joined] - (now_s() - t0))));
      }
      lt_image_batch_free(b);
    } else {
      lt_model_info info;
      lt_model_get_info(m, &info);
      std::vector<uint8_t> px(static_cast<size_t>(info.height * info.width * info.channels));
      for (size_t i = 0; i < arrive.size(); ++i) {
        const double wait = arrive[i] - (now_s() - t0);
        if (wait > 0) std::this_thread::sleep_for(Seconds(wait));
        lt_image_options io = lt_image_default_options();
        io.seed = i;
        ok(lt_image_sample(m, 1, &io, px.data(), nullptr));
        latency.push_back(now_s() - t0 - arrive[i]);
      }
    }
    const double span = now_s() - t0 - arrive.front();
    Row row = environment_row(o.device, num_threads());
    row.set("mode", std::string("images ") + mode).set("requests", o.images).set("arrival_s", o.arrival);
    row.set("images_per_s", double(o.images) / span).set("latency_mean_s", Stats::of(latency).mean);
    row.set("latency_p95_s", percentile(latency, 0.95)).set("precision", o.precision());
    if (o.verbose) std::cerr << "images " << mode << ": " << double(o.images) / span << " images/s\n";
    out.add(row);
  }
  lt_model_free(m);
}

}  // namespace

void run_streams_bench(const StreamsBenchOptions& o, Writer& out) {
  for (const std::string& mode : o.modes)
    check(mode == "batched" || mode == "alone" || mode == "processes" || mode == "saturated",
          "--mode is batched, alone, processes or saturated, not '" + mode + "'");
  const bool paced = o.images > 0 || std::any_of(o.modes.begin(), o.modes.end(),
                                                 [](const std::string& m) { return m != "saturated"; });
  check(!paced || o.seconds > o.arrival, "--seconds must be longer than --arrival, so that every stream is live at once");
  check(o.device == "cpu" || std::find(o.modes.begin(), o.modes.end(), "processes") == o.modes.end(),
        "--mode processes runs lt-asr on the CPU; leave it out with -d cuda");
  for (const std::string& mode : o.modes)
    check(o.images == 0 || mode == "batched" || mode == "alone",
          "--images runs --mode batched and alone, not '" + mode + "'");
  if (o.images > 0) return images(o, out);
  const std::string model = o.model.empty() ? app::find_shipped_model("asr-stream.safetensors") : o.model;
  const std::string phone_lm = o.phone_lm.empty() ? app::find_shipped_model("speech-phones.arpa.gz") : o.phone_lm;
  lt_recognizer_options ro = lt_recognizer_default_options();
  ro.beam = o.beam;  // with the phone model and the rest of lt-asr's defaults
  ro.max_delay = o.max_delay;
  ro.prune = o.prune;
  if (phone_lm != "none") ro.phone_lm = phone_lm.c_str();
  ro.device = o.device.c_str();
  ro.precision = o.precision();
  lt_recognizer* made = nullptr;
  ok(lt_recognizer_new(model.c_str(), &ro, &made));
  const std::unique_ptr<lt_recognizer, void (*)(lt_recognizer*)> owned(made, lt_recognizer_free);
  lt_recognizer* r = owned.get();
  const std::vector<std::vector<float>> recs = recordings(o);
  const int64_t piece = int64_t(o.chunk_ms * kSpeechSampleRate / 1000);
  auto trial = [&](const std::string& mode, int64_t n) {
    const std::vector<Plan> ps = plans(o, recs, n, piece);
    if (o.verbose) std::cerr << "streams " << mode << " " << n << " ...\n";
    if (mode == "saturated") return run_saturated(o, r, ps, piece);
    const Result res = mode == "processes" ? run_processes(o, model, ps, piece)
                                           : run_in_process(o, r, ps, piece, mode == "batched");
    Row row = streams_row(o, mode, n, res);
    if (o.verbose) std::cerr << "streams " << mode << " " << n << ": " << (realtime(row) ? "real time" : "behind") << "\n";
    return row;
  };
  for (const std::string& mode : o.modes) {
    if (!o.find || mode == "saturated") {  // saturated has no pace to keep: --find has nothing to search
      out.add(trial(mode, o.streams));
      continue;
    }
    // The largest N that keeps real time: doubling, then bisection; every trial is a row.
    int64_t good = 0, bad = 0;
    for (int64_t n = o.streams; n <= o.max_streams; n *= 2) {
      const Row row = trial(mode, n);
      out.add(row);
      if (!realtime(row)) {
        bad = n;
        break;
      }
      good = n;
    }
    if (bad == 0) continue;
    while (bad - good > std::max<int64_t>(1, good / 16)) {
      const int64_t n = (good + bad) / 2;
      const Row row = trial(mode, n);
      out.add(row);
      (realtime(row) ? good : bad) = n;
    }
    if (o.verbose) std::cerr << "streams " << mode << ": " << good << " held in real time\n";
  }
}

}  // namespace lt::bench
