// The image endpoints (image_endpoints.h).
#include "image_endpoints.h"

#include <nlohmann/json.hpp>
#include <random>

#include "http_error.h"
#include "multipart.h"
#include "png_codec.h"
#include "request_fields.h"
#include "server_context.h"

namespace lt::server {

namespace {

// The answer once every image of a request is drawn.
void answer_with_images(const Models& models, uint64_t seed, std::vector<std::vector<uint8_t>> pixels,
                        const std::string& error, const Respond& respond) {
  if (!error.empty()) {
    respond(error_response(500, error));
    return;
  }
  const lt_model_info& c = models.image_info;
  if (pixels.size() == 1) {
    Response r = body_response(200, encode_png(pixels[0].data(), c.height, c.width, c.channels), "image/png");
    r.set("X-LT-Seed", std::to_string(seed));
    respond(std::move(r));
    return;
  }
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < pixels.size(); ++i)
    data.push_back({{"seed", seed + i},
                    {"b64_json", base64_encode(encode_png(pixels[i].data(), c.height, c.width, c.channels))}});
  respond(json_response(200, nlohmann::json{{"model", models.image_names[0]}, {"data", data}}.dump()));
}

std::shared_ptr<ImageWork> work_for(ServerContext& server, std::vector<ImageItem> items, uint64_t seed,
                                    Respond respond) {
  auto work = std::make_shared<ImageWork>();
  work->items = std::move(items);
  const Models& models = server.models;
  work->done = [&models, seed, respond = std::move(respond)](std::vector<std::vector<uint8_t>> pixels,
                                                             std::string error) {
    answer_with_images(models, seed, std::move(pixels), error, respond);
  };
  return work;
}

}  // namespace

std::vector<ImageItem> sample_items(uint64_t seed, int64_t count) {
  std::vector<ImageItem> items(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) items[size_t(j)].seed = seed + uint64_t(j);
  return items;
}

uint64_t fresh_seed() {
  std::random_device r;
  return uint64_t(r()) << 32 ^ r();
}

void handle_images(ServerContext& server, const Request& request, Respond respond) {
  const ImageRequest r = parse_image_request(request.body().empty() ? "{}" : request.body(), server.options.max_images,
                                             server.models.image_names);
  const uint64_t seed = r.seed_given ? r.seed : fresh_seed();
  server.compute.add_images(work_for(server, sample_items(seed, r.count), seed, std::move(respond)));
}

void handle_image_completions(ServerContext& server, const Request& request, Respond respond) {
  const std::vector<FormPart> parts = parse_multipart(std::string(request[http::field::content_type]), request.body());
  const FormPart* image = find_part(parts, "image");
  require(image != nullptr, "the form has no 'image' field (the PNG to complete)");
  const lt_model_info& c = server.models.image_info;
  int64_t count = 1, keep_rows = -1;
  uint64_t seed = 0;
  bool seed_given = false;
  if (const FormPart* p = find_part(parts, "count")) count = parse_whole_number(p->body, "count", 1, server.options.max_images);
  if (const FormPart* p = find_part(parts, "keep_rows")) keep_rows = parse_whole_number(p->body, "keep_rows", 0, c.height);
  if (const FormPart* p = find_part(parts, "seed")) {
    seed = parse_seed(p->body);
    seed_given = true;
  }
  if (const FormPart* p = find_part(parts, "model")) check_model_name(std::string(p->body), server.models.image_names, "image");
  if (!seed_given) seed = fresh_seed();

  const UploadedImage img = decode_png_upload(image->body);
  const bool alpha = img.channels == 2 || img.channels == 4;
  const int64_t colour = alpha ? img.channels - 1 : img.channels;
  require(img.width == c.width && img.height == c.height && colour == c.channels,
          "the image is " + std::to_string(img.width) + "x" + std::to_string(img.height) + " " +
              (colour == 1 ? "grey-scale" : "RGB") + "; the model " + server.models.image_names[0] + " completes " +
              std::to_string(c.width) + "x" + std::to_string(c.height) + " " + (c.channels == 1 ? "grey-scale" : "RGB") +
              " images (optionally with alpha)");
  require(keep_rows >= 0 || alpha, "give keep_rows, or an image whose alpha channel marks the unknown pixels");
  // What is kept, as lt-complete reads its input.
  const int64_t P = c.height * c.width, S = P * c.channels;
  ImageItem known;
  known.values.resize(size_t(S));
  known.known.resize(size_t(S));
  for (int64_t p = 0; p < P; ++p)
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      const size_t i = size_t(p * c.channels + ch);
      known.values[i] = img.pixels[size_t(p * img.channels + ch)];
      known.known[i] = keep_rows >= 0 ? p < keep_rows * c.width : img.pixels[size_t(p * img.channels + colour)] >= 128;
    }
  std::vector<ImageItem> items(static_cast<size_t>(count), known);
  for (int64_t j = 0; j < count; ++j) items[size_t(j)].seed = seed + uint64_t(j);
  server.compute.add_images(work_for(server, std::move(items), seed, std::move(respond)));
}

}  // namespace lt::server
