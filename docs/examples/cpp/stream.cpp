// Streams an audio file through an lt speech model in 100 ms pieces, as if
// it arrived live, printing each phone as soon as it is final, then the
// words of a whole-recording pass. C++ over the C API: each handle in a
// std::unique_ptr with its free function. Built against the installed package:
//   cmake -S . -B build -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build
//   ./build/stream <prefix>/share/lt/weights/asr-stream.safetensors speech.wav
#include <lt.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

template <class T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
using Recognizer = std::unique_ptr<lt_recognizer, Freer<lt_recognizer, lt_recognizer_free>>;
using Stream = std::unique_ptr<lt_stream, Freer<lt_stream, lt_stream_free>>;
using Transcript = std::unique_ptr<lt_transcript, Freer<lt_transcript, lt_transcript_free>>;
using Audio = std::unique_ptr<float, Freer<float, lt_audio_free>>;

// Throws the library's line when a call fails.
void ok(lt_status status) {
  if (status != LT_OK) throw std::runtime_error(lt_last_error());
}

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
  lt_recognizer* r = nullptr;
  ok(lt_recognizer_new(argv[1], nullptr, &r));
  Recognizer recognizer(r);
  float* samples = nullptr;
  int64_t count = 0;
  ok(lt_audio_read(argv[2], &samples, &count));
  Audio audio(samples);

  lt_stream* s = nullptr;
  ok(lt_stream_new(recognizer.get(), &s));
  Stream stream(s);
  const int64_t piece = 1600;  // 100 ms at 16 kHz
  for (int64_t at = 0; at < count; at += piece) {
    ok(lt_stream_push(stream.get(), audio.get() + at, std::min(piece, count - at)));
    lt_transcript* settled = nullptr;
    ok(lt_stream_take_settled(stream.get(), &settled));
    print_phones(Transcript(settled).get());
  }
  ok(lt_stream_finish(stream.get()));
  lt_transcript* last = nullptr;
  ok(lt_stream_take_settled(stream.get(), &last));
  print_phones(Transcript(last).get());
  std::fprintf(stderr, "stream: %.2f s of audio (lt %s)\n", double(count) / 16000, lt_version());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "stream: %s\n", e.what());
  return 1;
}
