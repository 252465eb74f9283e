// Model loading, as the tools call it, on arbitrary bytes: the first byte
// picks the family's loader (0: ImageModel::load, what lt-sample-image,
// lt-complete and lt-train --eval call; 1: load_copy_model; 2:
// load_speech_model), the rest is the checkpoint. Metadata parsing and every
// size derived from it are in play.
#include "fuzz_util.h"
#include "lt/copy_task.h"
#include "lt/image_model.h"
#include "lt/speech.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = lt::fuzz::scratch_dir() + "/model.safetensors";
  lt::fuzz::write_file(path, data + 1, size - 1);
  lt::fuzz::expect_lt_error_only(path, [&] {
    switch (data[0] % 3) {
      case 0:
        lt::ImageModel::load(path, lt::Device::cpu);
        break;
      case 1:
        lt::load_copy_model(path, lt::Device::cpu);
        break;
      default:
        lt::load_speech_model(path, lt::Device::cpu);
    }
  });
  return 0;
}
