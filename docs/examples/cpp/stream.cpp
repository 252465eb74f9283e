// Streams an audio file through an lt speech model in 100 ms pieces, as if
// it arrived live, printing each phone as soon as it is final. C++ over the
// C API through lt.hpp: each handle in a std::unique_ptr that frees it, each
// failure an exception. Built against the installed package:
//   cmake -S . -B build -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build
//   ./build/stream <prefix>/share/lt/weights/asr-stream.safetensors speech.wav
#include <lt.hpp>

#include <algorithm>
#include <cstdio>

namespace {

void print_phones(const lt_transcript* t) {
  for (int64_t i = 0; i < lt_transcript_phones(t); ++i) {
    const lt_token p = lt_transcript_phone(t, i);
    std::printf("%6.2f %s\n", p.start, p.text);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stream MODEL.safetensors AUDIO\n");
    return 2;
  }
  using namespace lt::api;
  Recognizer recognizer = new_recognizer(argv[1], lt_recognizer_default_options());
  float* samples = nullptr;
  int64_t count = 0;
  ok(lt_audio_read(argv[2], &samples, &count));
  Audio audio(samples);

  Stream stream = new_stream(recognizer.get());
  const int64_t piece = 1600;  // 100 ms at 16 kHz
  for (int64_t at = 0; at < count; at += piece) {
    ok(lt_stream_push(stream.get(), audio.get() + at, std::min(piece, count - at)));
    print_phones(take_settled(stream.get()).get());
  }
  ok(lt_stream_finish(stream.get()));
  print_phones(take_settled(stream.get()).get());
  std::fprintf(stderr, "stream: %.2f s of audio (lt %s)\n", double(count) / 16000, lt_version());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "stream: %s\n", e.what());
  return 1;
}
