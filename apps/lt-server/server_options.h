// Everything lt-server is started with: its models, its address, its keys
// and its limits. main.cpp declares the flags over these fields once, with
// the defaults below (lt-server --help prints them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lt::server {

struct ServerOptions {
  // Models: paths from the command line only; clients name them (each by
  // its file name without .safetensors).
  std::string model;         // offline speech model for the file endpoints (default: asr.safetensors)
  std::string stream_model;  // causal speech model for /asr (default: asr-stream.safetensors)
  std::string image_model;   // image model (default: mnist.safetensors)
  std::string phone_lm, lexicon, lm;  // as lt-asr's --phone-lm, --lexicon, --lm ("none": without)
  int beam = 64;             // lt-asr's default
  bool bf16 = false, tf32 = false;  // the speech encoders' products, as lt-asr's --bf16 and --tf32
  std::string device = "cpu";
  int threads = 0;           // CPU threads of the models (0: all cores)
  std::string web;           // the page's folder (default: share/lt/web, or the source tree's)

  // Where and how to listen.
  std::string host = "127.0.0.1";
  int port = 8080;           // 0: any free port (printed)
  int io_threads = 2;
  std::vector<std::string> api_keys;  // empty: no key needed
  std::string api_key_file;           // more keys, one a line (kept out of the process's arguments)
  std::string tls_cert, tls_key;      // both: HTTPS and WSS only

  // Limits.
  int64_t max_connections = 256;
  int64_t max_streams = 64;              // live /asr streams
  int64_t max_message_bytes = 1 << 20;   // a WebSocket message, a JSON body
  int64_t max_upload_bytes = 64 << 20;   // a multipart upload
  double max_stream_seconds = 3600;      // audio in one /asr stream
  double idle_seconds = 30;              // silence from a client before it is dropped
  double requests_per_second = 20;       // per client address, bursts of twice that (0: no limit)
  int64_t max_images = 16;               // images in one request
  double drain_seconds = 30;             // SIGTERM: how long live streams may go on
  int step_interval_ms = 20;             // the compute loop gathers audio this long between steps
};

}  // namespace lt::server
