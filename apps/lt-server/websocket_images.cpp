// Images drawn live over a WebSocket (websocket_images.h).
#include "websocket_images.h"

#include <nlohmann/json.hpp>

#include "image_endpoints.h"
#include "png_codec.h"
#include "request_fields.h"

namespace lt::server {

template <class Stream>
ImageStreamSession<Stream>::ImageStreamSession(ServerContext& server, Stream&& stream, ConnectionHold connection)
    : Base(server, std::move(stream), std::move(connection)) {}

template <class Stream>
ImageStreamSession<Stream>::~ImageStreamSession() {
  on_gone();
}

template <class Stream>
void ImageStreamSession<Stream>::run(Request upgrade, const std::string& protocol) {
  this->accept(std::move(upgrade), protocol);
}

template <class Stream>
void ImageStreamSession<Stream>::on_open() {
  this->arm_idle();
  this->read_message();
}

template <class Stream>
void ImageStreamSession<Stream>::on_message(bool text, std::string_view bytes) {
  if (work_) return this->fail(kCloseBadData, "one request per connection: open another for more images", "bad_frame");
  ImageRequest r;
  try {
    require(text, "expected a JSON request such as {\"count\": 1, \"seed\": 7}, not a binary frame");
    r = parse_image_request(bytes, this->server_.options.max_images, this->server_.models.image_names);
  } catch (const HttpError& e) {
    return this->fail(e.close_code(), e.what(), "bad_frame");
  }
  this->stop_idle();
  seed_ = r.seed_given ? r.seed : fresh_seed();
  const lt_model_info& c = this->server_.models.image_info;
  nlohmann::json start = {{"model", this->server_.models.image_names[0]},
                          {"seed", seed_},
                          {"count", r.count},
                          {"height", c.height},
                          {"width", c.width},
                          {"channels", c.channels}};
  this->send(start.dump());
  work_ = std::make_shared<ImageWork>();
  work_->items = sample_items(seed_, r.count);
  auto weak = this->weak_from_this();
  auto executor = this->ws_.get_executor();
  work_->progress = [weak, executor](std::vector<DecidedRun> runs) {
    net::post(executor, [weak, runs = std::move(runs)]() mutable {
      if (auto self = weak.lock()) self->on_progress(std::move(runs));
    });
  };
  work_->done = [weak, executor](std::vector<std::vector<uint8_t>> pixels, std::string error) {
    net::post(executor, [weak, pixels = std::move(pixels), error = std::move(error)]() mutable {
      if (auto self = weak.lock()) self->on_done(std::move(pixels), error);
    });
  };
  this->server_.compute.add_images(work_);
  this->read_message();  // a close from the client cancels; another request is refused
}

template <class Stream>
void ImageStreamSession<Stream>::on_progress(std::vector<DecidedRun> runs) {
  if (this->closing()) return;
  nlohmann::json decided = nlohmann::json::array();
  for (const DecidedRun& r : runs)
    decided.push_back({{"image", r.image}, {"subpixel", r.first}, {"values", r.values}});
  this->send(nlohmann::json{{"decided", decided}}.dump());
}

template <class Stream>
void ImageStreamSession<Stream>::on_done(std::vector<std::vector<uint8_t>> pixels, const std::string& error) {
  if (this->closing()) return;
  if (!error.empty()) return this->fail(kCloseInternal, error, "internal");
  const lt_model_info& c = this->server_.models.image_info;
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < pixels.size(); ++i)
    data.push_back({{"seed", seed_ + i}, {"b64_json", base64_encode(encode_png(pixels[i].data(), c.height, c.width, c.channels))}});
  this->send(nlohmann::json{{"done", true}, {"data", data}}.dump());
  work_.reset();
  this->close(kCloseNormal, "");
}

template <class Stream>
void ImageStreamSession<Stream>::on_gone() {
  if (work_) work_->cancelled.store(true);
  work_.reset();
}

template class ImageStreamSession<PlainStream>;
template class ImageStreamSession<TlsStream>;

}  // namespace lt::server
