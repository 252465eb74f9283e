// read_cifar10_batches on one to three files, cut from the input at
// kFileSeparator, as lt-train reads the five training batches in one call.
#include "fuzz_util.h"
#include "io/image_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto files = lt::fuzz::split_files(data, size, 3);
  std::vector<std::string> paths;
  for (size_t i = 0; i < files.size(); ++i) {
    paths.push_back(lt::fuzz::scratch_dir() + "/data_batch_" + std::to_string(i + 1) + ".bin");
    lt::fuzz::write_file(paths.back(), files[i].data(), files[i].size());
  }
  // Any of the files may be the one at fault: the message must start with the folder.
  lt::fuzz::expect_lt_error_only(lt::fuzz::scratch_dir(), [&] { lt::read_cifar10_batches(paths); });
  return 0;
}
