// Whole files: POST /inference (whisper.cpp's server: multipart field
// "file", "response_format" json | text | verbose_json | srt | vtt, json by
// default) and POST /v1/audio/transcriptions (OpenAI's: "file", "model",
// "response_format"; "language", if given, must be English). Any format
// libsndfile reads, at any rate and channel count, through the offline
// model with lt-asr's defaults, so the words equal lt-asr --words on the
// same file. A worker thread of its own runs the offline recognizer (one
// thread may use it at a time), so a long file never holds up the streams.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "http_types.h"
#include "lt.h"
#include "metrics.h"
#include "transcript_formats.h"

namespace lt::server {

class FileTranscriber {
 public:
  FileTranscriber(lt_recognizer* recognizer, Metrics& metrics);
  ~FileTranscriber();
  // Finishes the file in progress and stops; what is still queued is dropped.
  void stop();
  // Transcribes an uploaded file on the worker thread and formats it;
  // respond gets the answer there (and must only post).
  void submit(std::string bytes, std::string format, Respond respond);

 private:
  struct Job {
    std::string bytes, format;
    Respond respond;
  };
  void run();
  Response transcribe(const Job& job);
  lt_recognizer* recognizer_;
  Metrics& metrics_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::thread thread_;
};

struct ServerContext;

// Both endpoints (their forms share these fields and the json default):
// checks the form now, so a bad one is answered at once, then queues the
// file. Throws HttpError for a bad request.
void handle_transcription(ServerContext& server, const Request& request, Respond respond);

}  // namespace lt::server
