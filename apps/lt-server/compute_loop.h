// The one thread that computes. Sessions on the I/O threads hand it audio
// and image requests and get results back through callbacks that only post
// to their strands; it loops:
//
//   wait (a condition variable: no work, no wake-up; live streams: at most
//         every --step-interval-ms, so that audio from many clients gathers
//         into one batch)
//   streams: open the new ones, push each one's queued audio, finish those
//            at eof, one lt_stream_group_step over all of them, hand each
//            stream what settled and its tentative tail, free finished ones
//   images:  add new jobs to the continuous batch, one lt_image_batch_step,
//            hand out the subpixels each job decided, and finished images
//
// Every stream of every connection goes through the group's batched step
// (lt.h: "many live streams, one step"); every image through the image
// batch. Stream handles are opened, pushed, finished and freed on this
// thread only, so a session never touches the library.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "lt.h"
#include "metrics.h"
#include "vosk_protocol.h"

namespace lt::server {

// One step's news for one stream.
struct StreamUpdate {
  StreamResults results;
  int answers = 0;      // frames (audio or reset) whose effect this step decoded
  bool final = false;   // the stream ended: everything settled; no update follows
  std::string error;    // this stream failed (no update follows)
};

// One subpixel run decided for one image of a request.
struct DecidedRun {
  int64_t image;          // index in the request
  int64_t first;          // subpixel index of values[0]
  std::vector<uint8_t> values;
};

struct ImageItem {
  uint64_t seed = 0;
  std::vector<uint8_t> values, known;  // a completion's kept subpixels; both empty: a fresh sample
};

// A request for images, shared by its session and the loop.
struct ImageWork {
  std::vector<ImageItem> items;
  // Called on the compute thread; each must only post to the session.
  std::function<void(std::vector<DecidedRun>)> progress;  // null: not wanted
  std::function<void(std::vector<std::vector<uint8_t>> pixels, std::string error)> done;
  std::atomic<bool> cancelled{false};  // the client left: drop the jobs
};

class ComputeLoop {
 public:
  using Deliver = std::function<void(StreamUpdate)>;  // called on the compute thread; must only post

  ComputeLoop(lt_recognizer* recognizer, lt_model* image_model, std::chrono::milliseconds step_interval,
              Metrics& metrics);
  ~ComputeLoop();  // stops the thread and frees every stream and job
  // Stops the thread (no callback runs after it returns) and drops the image
  // requests; the streams' handles stay until the destructor.
  void stop();
  ComputeLoop(const ComputeLoop&) = delete;
  ComputeLoop& operator=(const ComputeLoop&) = delete;

  // Streams (from any thread). sample_rate: of the audio pushed, which the
  // stream resamples to 16 kHz as it arrives (lt_stream_set_rate).
  uint64_t open_stream(double sample_rate, Deliver deliver);
  // Mono samples at the stream's rate; answered: a reply is owed for this
  // frame once decoded.
  void push_audio(uint64_t id, std::vector<float> samples, bool answered);
  void push_reset(uint64_t id);     // a frame owed a reply, without audio
  void end_stream(uint64_t id);     // eof: finish, then the final update
  void close_stream(uint64_t id);   // the session is gone: no more updates
  void end_all_streams();           // a drain's deadline: every stream ends as at eof
  void add_images(std::shared_ptr<ImageWork> work);

 private:
  struct Pending {  // what sessions handed over since the last step, under mutex_
    Deliver deliver;  // set when the stream is new
    double sample_rate = 0;  // likewise
    std::vector<float> audio;
    int answers = 0;
    bool fresh = false, end = false, closed = false;
  };
  struct Live {  // a stream on the compute thread
    lt_stream* stream = nullptr;
    Deliver deliver;
    double sample_rate = 0;
    int answers = 0;
    int64_t samples = 0;  // at sample_rate
    bool finishing = false;
  };
  struct Running {  // an image request on the compute thread
    std::shared_ptr<ImageWork> work;
    std::vector<lt_image_job*> jobs;
    std::vector<int64_t> sent;  // subpixels handed to progress per job
  };

  void run();
  void step_streams(std::unordered_map<uint64_t, Pending> work, bool end_all);
  void step_images(std::vector<std::shared_ptr<ImageWork>> added);
  void fail_stream(uint64_t id, Live& live, const std::string& error);

  lt_recognizer* recognizer_;
  lt_model* image_model_;
  std::chrono::milliseconds interval_;
  Metrics& metrics_;
  lt_stream_group* group_ = nullptr;
  lt_image_batch* images_ = nullptr;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool end_all_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Pending> pending_;
  std::vector<std::shared_ptr<ImageWork>> image_queue_;

  // The compute thread's own.
  std::map<uint64_t, Live> live_;
  std::vector<Running> running_;
  std::chrono::steady_clock::time_point last_step_{};
  bool unsettled_ = false;  // a finishing stream is not done yet: step again
  std::thread thread_;
};

}  // namespace lt::server
