// /images/stream: digits drawn subpixel by subpixel. The client sends one
// request, {"count": N, "seed": S, "model": "mnist"} (each optional, as
// POST /v1/images takes), and gets
//   {"model", "seed", "count", "height", "width", "channels"}      at once
//   {"decided": [{"image": i, "subpixel": t, "values": [v, ...]}]}  per step of the image batch:
//                                        the values of subpixels t, t+1, ... of image i
//                                        (raster order, channels interleaved), as decided
//   {"done": true, "data": [{"seed", "b64_json"}]}                 the PNGs, then a normal close
// One "decided" message per step (at most height x width x channels of
// them, each holding every image's new subpixels). A client that leaves
// cancels its images.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "compute_loop.h"
#include "websocket_connection.h"

namespace lt::server {

template <class Stream>
class ImageStreamSession : public WebSocketConnection<Stream, ImageStreamSession<Stream>> {
  using Base = WebSocketConnection<Stream, ImageStreamSession<Stream>>;
  friend Base;

 public:
  ImageStreamSession(ServerContext& server, Stream&& stream, ConnectionHold connection);
  ~ImageStreamSession();
  void run(Request upgrade, const std::string& protocol);

 private:
  void on_open();
  void on_message(bool text, std::string_view bytes);
  void on_gone();
  void on_progress(std::vector<DecidedRun> runs);
  void on_done(std::vector<std::vector<uint8_t>> pixels, const std::string& error);

  std::shared_ptr<ImageWork> work_;
  uint64_t seed_ = 0;
};

}  // namespace lt::server
