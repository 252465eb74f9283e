// Images over HTTP, drawn in the compute loop's continuous batch:
//   POST /v1/images             {"count": N, "seed": S, "model": "mnist"} (each optional)
//   POST /v1/images/completions multipart: "image" (a PNG of the model's size), "keep_rows"
//                               (rows kept from the top; without it the PNG's alpha says what is
//                               known, as lt-complete), "seed", "count", "model"
// One image comes back as image/png (its seed in X-LT-Seed), several as
// JSON {"model", "data": [{"seed", "b64_json"}]}. Image j is drawn from
// seed + j: the image lt-sample-image -n 1 -s SEED+j draws, or the
// completion lt-complete -n 1 -s SEED+j makes, byte for byte.
#pragma once
#include <cstdint>
#include <vector>

#include "compute_loop.h"
#include "http_types.h"

namespace lt::server {

struct ServerContext;

void handle_images(ServerContext& server, const Request& request, Respond respond);
void handle_image_completions(ServerContext& server, const Request& request, Respond respond);

// count fresh samples from seed, seed + 1, ...
std::vector<ImageItem> sample_items(uint64_t seed, int64_t count);
// A seed for a request that gave none.
uint64_t fresh_seed();

}  // namespace lt::server
