// The audio readers on arbitrary bytes. Byte 0 picks the reader: 0
// read_audio (libsndfile's formats), 1 read_audio as raw PCM, 2 AudioStream
// (a WAV stream), 3 AudioStream as raw PCM; for raw, byte 1 picks the rate,
// channels and sample format.
#include <fcntl.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "lt/audio.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] % 4;
  const int rates[4] = {8000, 16000, 22050, 44100};
  const lt::PcmFormat formats[5] = {lt::PcmFormat::s16le, lt::PcmFormat::s24le, lt::PcmFormat::s32le,
                                    lt::PcmFormat::f32le, lt::PcmFormat::u8};
  const lt::RawAudio raw{rates[data[1] % 4], 1 + (data[1] >> 2) % 2, formats[(data[1] >> 3) % 5]};
  const std::string path = lt::fuzz::scratch_dir() + "/input.audio";
  lt::fuzz::write_file(path, data + 2, size - 2);
  if (mode < 2) {
    lt::fuzz::expect_lt_error_only(path, [&] { lt::read_audio(path, mode == 1 ? raw : lt::RawAudio{}); });
    return 0;
  }
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) std::abort();
  lt::fuzz::expect_lt_error_only(path, [&] {
    lt::AudioStream in(fd, path, mode == 3 ? raw : lt::RawAudio{});
    std::vector<float> chunk;
    while (in.read(chunk)) {
    }
  });
  close(fd);
  return 0;
}
