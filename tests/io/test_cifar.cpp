#include "io/image_dataset.h"
#include "io/temp_dir.h"

using namespace lt;
using namespace lt::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("read_cifar10_batches turns planar records into interleaved RGB file after file") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const int files = int(rng.integer(1, 3));
  std::vector<std::string> paths;
  std::vector<std::vector<uint8_t>> contents;
  for (int f = 0; f < files; ++f) {
    const int64_t records = rng.integer(1, 5);
    std::vector<uint8_t> bytes = random_bytes(rng, records * 3073);
    for (int64_t r = 0; r < records; ++r) bytes[size_t(r * 3073)] = uint8_t(rng.integer(0, 9));
    paths.push_back(tmp.file("batch" + std::to_string(f) + ".bin"));
    write_bytes(paths.back(), bytes);
    contents.push_back(bytes);
  }

  const ImageSet set = read_cifar10_batches(paths);
  CHECK(set.height == 32);
  CHECK(set.width == 32);
  CHECK(set.channels == 3);
  int64_t n = 0;
  for (const auto& bytes : contents) {
    for (size_t r = 0; r < bytes.size() / 3073; ++r, ++n) {
      const uint8_t* rec = bytes.data() + r * 3073;
      REQUIRE(n < set.count);
      CHECK(set.labels[size_t(n)] == rec[0]);
      // Pixel (y, x) channel c sits at c * 1024 + y * 32 + x after the label on disk.
      int mismatches = 0;
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x)
          for (int c = 0; c < 3; ++c)
            mismatches +=
                set.pixels[size_t(((n * 32 + y) * 32 + x) * 3 + c)] != rec[1 + c * 1024 + y * 32 + x];
      CHECK(mismatches == 0);
    }
  }
  CHECK(set.count == n);
  CHECK(set.labels.size() == size_t(n));
  CHECK(set.pixels.size() == size_t(n * 3072));
}

TEST_CASE("malformed CIFAR-10 batches give errors naming the file and the problem") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::string good = tmp.file("good.bin"), bad = tmp.file("bad.bin");
  std::vector<uint8_t> one_record = random_bytes(rng, 3073);
  one_record[0] = uint8_t(rng.integer(0, 9));
  write_bytes(good, one_record);

  auto expect = [&](const std::vector<uint8_t>& bytes, const std::string& problem) {
    INFO("expected problem " << problem);
    write_bytes(bad, bytes);
    const std::string msg = error_of([&] { read_cifar10_batches({good, bad}); });
    CHECK(contains(msg, bad));
    CHECK(contains(msg, problem));
  };
  const int64_t records = rng.integer(1, 3);
  expect(random_bytes(rng, records * 3073 + rng.integer(1, 3072)), "multiple of the 3073-byte");
  expect({}, "size 0 bytes");
  std::vector<uint8_t> labelled = random_bytes(rng, records * 3073);
  for (int64_t r = 0; r < records; ++r) labelled[size_t(r * 3073)] = uint8_t(rng.integer(0, 9));
  const int64_t odd = rng.integer(0, records - 1);
  labelled[size_t(odd * 3073)] = uint8_t(rng.integer(10, 255));
  expect(labelled,
         "record " + std::to_string(odd) + " has label " + std::to_string(labelled[size_t(odd * 3073)]));

  const std::string missing = tmp.file("missing.bin");
  const std::string msg = error_of([&] { read_cifar10_batches({missing}); });
  CHECK(contains(msg, missing));
  CHECK(contains(msg, "cannot open"));
}
