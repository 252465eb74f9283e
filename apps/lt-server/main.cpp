// lt-server: live transcription and image generation for many clients at
// once, over WebSocket and HTTP, with a web page. Models are loaded once;
// every live stream of every connection is decoded in one batched step, and
// every image drawn in one continuous batch (docs/server.md). Logs go to
// stderr; the first line says where it listens.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "command_line.h"
#include "common_options.h"
#include "auth.h"
#include "models.h"
#include "process_setup.h"
#include "server.h"

LT_BEFORE_LIBRARIES(lt::app::setup_process<lt::app::UnderLoad::free_cores>);

int main(int argc, char** argv) {
  lt::server::ServerOptions o;
  CLI::App app{"lt-server: live speech recognition (Vosk's WebSocket protocol), file transcription (whisper.cpp's and "
               "OpenAI's forms) and image generation over HTTP and WebSocket, with a web page"};
  app.set_help_flag("-h,--help", "show every option with its default");
  app.add_option("-m,--model", o.model,
                 "offline speech model for /inference and /v1/audio/transcriptions (default: asr.safetensors in "
                 "$LT_WEIGHTS if set, else the shipped weights/)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--stream-model", o.stream_model,
                 "causal speech model for /asr (default: asr-stream.safetensors, found likewise)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--image-model", o.image_model, "image model (default: mnist.safetensors, found likewise)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--beam", o.beam, "CTC beam width of both speech models (lt-asr's --beam)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  lt::app::add_precision_flags(app, o.bf16, o.tf32, lt::app::PrecisionUse::recognition);
  app.add_option("--phone-lm", o.phone_lm,
                 "phone n-gram model (ARPA, plain or gzip) for the beam search, or 'none' (default: "
                 "speech-phones.arpa.gz, found likewise)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--lexicon", o.lexicon, "pronunciations of the words (CMU dict format; default: pocketsphinx's CMU dict)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--lm", o.lm, "ARPA word model, plain or gzip, or 'none' (default: speech-words.arpa.gz, found likewise)")
      ->check(lt::app::kNonEmpty);
  lt::app::add_device_option(app, o.device);
  lt::app::add_threads_option(app, o.threads);
  app.add_option("--web", o.web, "the web page's folder (default: <prefix>/share/lt/web, else the source tree's)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--host", o.host, "address to listen on (0.0.0.0 or :: for every interface)")
      ->capture_default_str()
      ->check(lt::app::kNonEmpty);
  app.add_option("--port", o.port, "port to listen on (0: any free one, printed on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--io-threads", o.io_threads, "threads for network I/O (computing has its own)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--api-key", o.api_keys,
                 "a key clients must present (Authorization: Bearer KEY, the WebSocket subprotocol lt-key.KEY, or "
                 "?api_key=KEY) on every endpoint but /health and the page; repeat for several")
      ->check(CLI::Validator(
          [](std::string& k) -> std::string {
            for (unsigned char c : k)
              if (c <= 0x20 || c >= 0x7f || c == ',') return "expected printable ASCII without spaces or commas";
            return k.empty() ? "expected a key, got ''" : "";
          },
          ""));
  app.add_option("--api-key-file", o.api_key_file,
                 "keys as --api-key, one a line ('#' starts a comment), so that they do not show in the process's "
                 "arguments")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain: serve HTTPS and WSS only (with --tls-key)")
      ->check(lt::app::kNonEmpty);
  app.add_option("--tls-key", o.tls_key, "PEM private key of --tls-cert")->check(lt::app::kNonEmpty);
  app.add_option("--max-connections", o.max_connections, "open connections at once (more are answered 503)")
      ->capture_default_str()
      ->check(lt::app::kPositive);
  app.add_option("--max-streams", o.max_streams, "live /asr streams at once (more are answered 503)")
      ->capture_default_str()
      ->check(lt::app::kPositive);
  app.add_option("--max-message-bytes", o.max_message_bytes, "a WebSocket message or a JSON request body")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1024), int64_t(1) << 40));
  app.add_option("--max-upload-bytes", o.max_upload_bytes, "a file upload's whole request body")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1024), int64_t(1) << 40));
  app.add_option("--max-stream-seconds", o.max_stream_seconds, "seconds of audio in one /asr stream")
      ->capture_default_str()
      ->check(lt::app::kPositiveReal);
  app.add_option("--idle-seconds", o.idle_seconds,
                 "a client silent this long is dropped (and a request's header or body must arrive within it)")
      ->capture_default_str()
      ->check(lt::app::kPositiveReal);
  app.add_option("--requests-per-second", o.requests_per_second,
                 "requests a second per client address, with bursts of twice that (0: no limit)")
      ->capture_default_str()
      ->check(lt::app::real_at_least(0));
  app.add_option("--max-images", o.max_images, "images in one request")
      ->capture_default_str()
      ->check(lt::app::kPositive);
  app.add_option("--drain-seconds", o.drain_seconds,
                 "on SIGTERM or SIGINT, how long live streams may go on before they are ended with their final "
                 "results")
      ->capture_default_str()
      ->check(lt::app::real_at_least(0));
  app.add_option("--step-interval-ms", o.step_interval_ms,
                 "the compute loop gathers audio from every stream this long between batched steps")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-server"); status >= 0) return status;

  std::signal(SIGPIPE, SIG_IGN);
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    std::fprintf(stderr, "lt-server: --tls-cert and --tls-key go together\n");
    return 1;
  }
  try {
    if (!o.api_key_file.empty()) lt::server::read_api_keys(o.api_key_file, o.api_keys);
    lt::server::Models models = lt::server::load_models(o);
    std::fprintf(stderr, "lt-server: models %s (/asr), %s (files), %s (images); %zu API key(s)%s\n",
                 models.stream_names[0].c_str(), models.offline_names[0].c_str(), models.image_names[0].c_str(),
                 o.api_keys.size(), o.host == "127.0.0.1" || o.host == "::1" || o.host == "localhost" ? "" : "; not only local");
    lt::server::Server server(o, models);
    return server.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lt-server: %s\n", e.what());
    return 1;
  }
}
