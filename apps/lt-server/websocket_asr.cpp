// Vosk's protocol over a WebSocket, into the batched streams (websocket_asr.h).
#include "websocket_asr.h"

namespace lt::server {

namespace {
constexpr size_t kMaxOwedReplies = 64;
// An utterance ends once this much audio has followed its last word with
// nothing tentative after it: the recognizer's pause (it starts afresh after
// lt_recognizer_options.pause_seconds, 0.4 s) plus as long again for the
// phones of a next word, which surface a little after their audio.
constexpr double kEndpointSeconds = 0.8;
}  // namespace

template <class Stream>
AsrSession<Stream>::AsrSession(ServerContext& server, Stream&& stream, ConnectionHold connection, SlotHold stream_slot)
    : Base(server, std::move(stream), std::move(connection)),
      input_(server.models.stream_names, server.options.max_stream_seconds),
      stream_slot_(std::move(stream_slot)) {}

template <class Stream>
AsrSession<Stream>::~AsrSession() {
  on_gone();
}

template <class Stream>
void AsrSession<Stream>::run(Request upgrade, const std::string& protocol) {
  this->accept(std::move(upgrade), protocol);
}

template <class Stream>
void AsrSession<Stream>::on_open() {
  this->arm_idle();
  this->read_message();
}

template <class Stream>
uint64_t AsrSession<Stream>::stream() {
  // Opened with the first frame that needs it, so that a connection that
  // fails at its config costs the compute thread nothing. Updates come on
  // the compute thread; they are posted to this session's strand, and
  // dropped if it is gone.
  if (stream_ == 0) {
    auto weak = this->weak_from_this();
    auto executor = this->ws_.get_executor();
    stream_ = this->server_.compute.open_stream(input_.config().sample_rate, [weak, executor](StreamUpdate u) {
      net::post(executor, [weak, u = std::move(u)]() mutable {
        if (auto self = weak.lock()) self->on_update(std::move(u));
      });
    });
  }
  return stream_;
}

// The idle limit counts only the client's turns: while replies are owed,
// or after eof, the wait is the server's.
template <class Stream>
void AsrSession<Stream>::idle_if_clients_turn() {
  if (answers_.empty() && !eof_)
    this->arm_idle();
  else
    this->stop_idle();
}

template <class Stream>
void AsrSession<Stream>::read_if_room() {
  if (!this->closing() && answers_.size() < kMaxOwedReplies) this->read_message();
}

template <class Stream>
void AsrSession<Stream>::on_message(bool text, std::string_view bytes) {
  try {
    VoskEvent e = text ? input_.text(bytes) : input_.binary(bytes);
    ComputeLoop& compute = this->server_.compute;
    switch (e.kind) {
      case VoskEvent::config:
        break;  // Vosk answers a config with nothing
      case VoskEvent::audio:
        compute.push_audio(stream(), std::move(e.samples), true);
        answers_.push_back(Answer::audio);
        break;
      case VoskEvent::reset:
        compute.push_reset(stream());
        answers_.push_back(Answer::reset);
        break;
      case VoskEvent::eof:
        compute.end_stream(stream());
        eof_ = true;
        break;
    }
  } catch (const HttpError& e) {
    return this->fail(e.close_code(), e.what(), e.close_code() == kClosePolicy ? "stream_length" : "bad_frame");
  } catch (const std::exception& e) {
    return this->fail(kCloseInternal, e.what(), "internal");
  }
  idle_if_clients_turn();
  read_if_room();  // after eof too: a frame then is an error, a close is seen
}

template <class Stream>
void AsrSession<Stream>::on_update(StreamUpdate u) {
  if (ended_ || this->closing()) return;
  if (!u.error.empty()) {
    ended_ = true;
    return this->fail(kCloseInternal, u.error, "recognition");
  }
  if (!replies_) replies_.emplace(input_.config().words, kEndpointSeconds);
  std::vector<Answer> kinds;
  for (int i = 0; i < u.answers && !answers_.empty(); ++i) {
    kinds.push_back(answers_.front());
    answers_.pop_front();
  }
  for (std::string& m : replies_->replies(u.results, kinds, u.final)) this->send(std::move(m));
  if (u.final) {
    ended_ = true;
    // A stream the server ended (a drain's deadline) says why.
    if (eof_)
      this->close(kCloseNormal, "");
    else
      this->close(kCloseGoingAway, "the server is shutting down");
    return;
  }
  idle_if_clients_turn();
  read_if_room();
}

template <class Stream>
void AsrSession<Stream>::on_gone() {
  if (stream_ != 0 && !ended_) this->server_.compute.close_stream(stream_);
  ended_ = true;
  stream_ = 0;
  stream_slot_.release();
}

template class AsrSession<PlainStream>;
template class AsrSession<TlsStream>;

}  // namespace lt::server
