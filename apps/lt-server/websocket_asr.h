// /asr: one live stream per connection, in Vosk's protocol
// (protocol/vosk_protocol.h). Frames are checked by VoskInput and their
// audio, at the client's rate, handed to the compute loop, whose stream
// resamples it to 16 kHz (lt_stream_set_rate) and which steps every
// connection's stream together; each step's results come back
// here and become Vosk's replies, one per frame, in order. The stream's
// slot under --max-streams is held for the connection's life. A client that
// sends frames faster than they are decoded is not read from while 64
// replies are owed; --idle-seconds counts only while none is owed.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "vosk_protocol.h"
#include "websocket_connection.h"

namespace lt::server {

template <class Stream>
class AsrSession : public WebSocketConnection<Stream, AsrSession<Stream>> {
  using Base = WebSocketConnection<Stream, AsrSession<Stream>>;
  friend Base;

 public:
  AsrSession(ServerContext& server, Stream&& stream, ConnectionHold connection, SlotHold stream_slot);
  ~AsrSession();
  void run(Request upgrade, const std::string& protocol);

 private:
  void on_open();
  void on_message(bool text, std::string_view bytes);
  void on_gone();
  void on_update(StreamUpdate u);
  void read_if_room();
  uint64_t stream();  // the compute loop's stream, opened on first use
  void idle_if_clients_turn();

  VoskInput input_;
  std::optional<VoskReplies> replies_;
  SlotHold stream_slot_;
  uint64_t stream_ = 0;  // the compute loop's id; 0: none open
  bool ended_ = false;   // the final result was sent, or the stream was given up
  bool eof_ = false;     // the client sent eof
  std::deque<Answer> answers_;
};

}  // namespace lt::server
