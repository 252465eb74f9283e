// The file endpoints and their worker (file_transcription.h).
#include "file_transcription.h"

#include <chrono>

#include "http_error.h"
#include "multipart.h"
#include "private_file.h"
#include "request_fields.h"
#include "server_context.h"
#include "transcript_tokens.h"

namespace lt::server {

FileTranscriber::FileTranscriber(lt_recognizer* recognizer, Metrics& metrics)
    : recognizer_(recognizer), metrics_(metrics), thread_([this] { run(); }) {}

void FileTranscriber::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Queued jobs hold their sessions: they go now, while the sessions'
  // io_context still exists.
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.clear();
}

FileTranscriber::~FileTranscriber() { stop(); }

void FileTranscriber::submit(std::string bytes, std::string format, Respond respond) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back({std::move(bytes), std::move(format), std::move(respond)});
  wake_.notify_one();
}

void FileTranscriber::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Response r;
    try {
      r = transcribe(job);
    } catch (const HttpError& e) {
      r = error_response(e.status(), e.what());
    } catch (const std::exception& e) {
      r = error_response(500, e.what());
    }
    job.respond(std::move(r));
  }
}

Response FileTranscriber::transcribe(const Job& job) {
  const auto t0 = std::chrono::steady_clock::now();
  PrivateFile file(job.bytes);
  lt_transcript* t = nullptr;
  const lt_status status = lt_transcribe_file(recognizer_, file.path().c_str(), &t);
  if (status != LT_OK)
    return error_response(status == LT_ERROR ? 400 : 500, file.rename_in_message(lt_last_error(), "the uploaded file"));
  Transcription tr;
  tr.words = tokens_of(t, true);
  tr.phones = tokens_of(t, false);
  tr.duration = lt_transcript_seconds(t);
  lt_transcript_free(t);
  metrics_.file_transcribed(tr.duration, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  FormattedBody body = format_transcription(tr, job.format);
  return body_response(200, std::move(body.body), body.content_type);
}

void handle_transcription(ServerContext& server, const Request& request, Respond respond) {
  const std::vector<FormPart> parts = parse_multipart(std::string(request[http::field::content_type]), request.body());
  const FormPart* file = find_part(parts, "file");
  require(file != nullptr, "the form has no 'file' field (the audio to transcribe)");
  std::string format = "json";
  if (const FormPart* f = find_part(parts, "response_format")) format = std::string(f->body);
  require(is_transcription_format(format),
          "response_format '" + shown_text(format, 40) + "' is not one of json, text, verbose_json, srt, vtt");
  if (const FormPart* m = find_part(parts, "model")) check_model_name(std::string(m->body), server.models.offline_names,
                                                                      "transcription");
  if (const FormPart* l = find_part(parts, "language")) {
    const std::string_view language = l->body;
    require(language.empty() || language == "en" || language == "english" || language == "auto",
            "language '" + shown_text(language, 20) + "': this server recognises English only (en)");
  }
  server.files.submit(std::string(file->body), format, std::move(respond));
}

}  // namespace lt::server
