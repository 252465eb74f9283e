// load_image_dataset, the loader lt-train calls, on a folder the input makes:
// its first byte picks the layout, the rest is cut into files at
// kFileSeparator. PNG folders (flat and train/test) get two of the four
// layouts, as the folder reader is only reachable through here; IDX and
// CIFAR-10 folders add the format detection and the cross-file checks
// (label counts, train and test sizes) to what fuzz_idx and fuzz_cifar10 cover.
#include "fuzz_util.h"
#include "io/image_dataset.h"

namespace {

const std::vector<std::string> kIdxNames = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
const std::vector<std::string> kCifarNames = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                              "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

// The name of the i-th file in a layout.
std::string file_name(int layout, size_t i) {
  const std::string index = std::to_string(10 + i);  // sorts by name in input order
  switch (layout) {
    case 0: return index + ".png";
    case 1: return (i % 2 ? "test/" : "train/") + index + ".png";
    case 2: return kIdxNames[i];
    default: return kCifarNames[i];
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int layout = data[0] % 4;
  const std::string dir = lt::fuzz::scratch_dir() + "/dataset";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  if (layout == 1) {
    std::filesystem::create_directories(dir + "/train");
    std::filesystem::create_directories(dir + "/test");
  }
  const size_t max_files = layout == 2 ? kIdxNames.size() : 6;
  const auto files = lt::fuzz::split_files(data + 1, size - 1, max_files);
  for (size_t i = 0; i < files.size(); ++i)
    lt::fuzz::write_file(dir + "/" + file_name(layout, i), files[i].data(), files[i].size());
  lt::fuzz::expect_lt_error_only(dir, [&] { lt::load_image_dataset(dir); });
  return 0;
}
