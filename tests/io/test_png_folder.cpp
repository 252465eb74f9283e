#include <algorithm>
#include <filesystem>

#include "io/image_dataset.h"
#include "io/stored_deflate.h"
#include "io/temp_dir.h"

using namespace lt;
using namespace lt::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Writes a random w x h x c PNG and returns its pixels.
std::vector<uint8_t> write_random_png(Rng& rng, const std::string& path, int w, int h, int c) {
  const std::vector<uint8_t> pixels = random_bytes(rng, int64_t(w) * h * c);
  write_bytes(path, png_stored(w, h, c, std::vector<uint16_t>(pixels.begin(), pixels.end())));
  return pixels;
}

// Random distinct file names; returned sorted, the order the folder reader uses.
std::vector<std::string> random_names(Rng& rng, int n) {
  std::vector<std::string> names;
  while (int(names.size()) < n) {
    std::string name = "img" + std::to_string(rng.integer(0, 99999)) + (rng.integer(0, 3) ? ".png" : ".PNG");
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Writes PNGs under folder with the given names (in shuffled order) and returns
// their pixels concatenated in name order.
std::vector<uint8_t> write_folder(Rng& rng, TempDir& tmp, const std::string& folder,
                                  const std::vector<std::string>& names, int w, int h, int c) {
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng.gen);
  std::vector<std::vector<uint8_t>> pixels(names.size());
  for (size_t i : order) pixels[i] = write_random_png(rng, tmp.file(folder + names[i]), w, h, c);
  std::vector<uint8_t> all;
  for (const auto& p : pixels) all.insert(all.end(), p.begin(), p.end());
  return all;
}

}  // namespace

TEST_CASE("load_png_folder reads train/ and test/ in name order skipping other files") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const int w = int(rng.integer(1, 16)), h = int(rng.integer(1, 16)), c = int(rng.integer(1, 4));
  const std::vector<std::string> train_names = random_names(rng, int(rng.integer(1, 30)));
  const std::vector<std::string> test_names = random_names(rng, int(rng.integer(1, 10)));
  const std::vector<uint8_t> train = write_folder(rng, tmp, "train/", train_names, w, h, c);
  const std::vector<uint8_t> test = write_folder(rng, tmp, "test/", test_names, w, h, c);
  write_bytes(tmp.file("train/notes.txt"), random_bytes(rng, 10));
  write_random_png(rng, tmp.file("train/.hidden.png"), w + 1, h, c);
  std::filesystem::create_directories(tmp.path / "test" / "sub.png");

  const ImageDataset data = load_png_folder(tmp.str());
  CHECK(data.format == "png");
  CHECK(data.train.count == int64_t(train_names.size()));
  CHECK(data.test.count == int64_t(test_names.size()));
  for (const ImageSet* set : {&data.train, &data.test}) {
    CHECK(set->width == w);
    CHECK(set->height == h);
    CHECK(set->channels == c);
    CHECK(set->labels.empty());
  }
  CHECK(data.train.pixels == train);
  CHECK(data.test.pixels == test);
}

TEST_CASE("load_png_folder splits a flat folder: the last tenth by name (at least one) is test") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const int n = int(rng.integer(2, 45));
  const int w = int(rng.integer(1, 12)), h = int(rng.integer(1, 12)), c = int(rng.integer(1, 4));
  const std::vector<std::string> names = random_names(rng, n);
  const std::vector<uint8_t> all = write_folder(rng, tmp, "", names, w, h, c);

  const ImageDataset data = load_png_folder(tmp.str());
  const int64_t n_test = std::max(1, n / 10), bytes = int64_t(w) * h * c;
  CHECK(data.train.count == n - n_test);
  CHECK(data.test.count == n_test);
  CHECK(data.train.pixels == std::vector<uint8_t>(all.begin(), all.begin() + (n - n_test) * bytes));
  CHECK(data.test.pixels == std::vector<uint8_t>(all.begin() + (n - n_test) * bytes, all.end()));
  CHECK(data.test.width == w);
  CHECK(data.test.height == h);
  CHECK(data.test.channels == c);
}

TEST_CASE("PNG folders with odd images give errors naming the file") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int w = int(rng.integer(1, 12)), h = int(rng.integer(1, 12)), c = int(rng.integer(1, 3));
  const int n = int(rng.integer(3, 40));

  // One image of another size, another channel count, or not decodable.
  for (int kind = 0; kind < 3; ++kind) {
    INFO("kind " << kind);
    TempDir tmp;
    const std::vector<std::string> names = random_names(rng, n);
    write_folder(rng, tmp, "", names, w, h, c);
    const std::string odd = tmp.file(names[size_t(rng.integer(1, n - 1))]);
    if (kind == 0) write_random_png(rng, odd, w, h + 1, c);
    if (kind == 1) write_random_png(rng, odd, w, h, c + 1);
    if (kind == 2) write_bytes(odd, random_bytes(rng, 50));
    const std::string msg = error_of([&] { load_png_folder(tmp.str()); });
    CHECK(contains(msg, odd));
  }

  TempDir split;
  write_folder(rng, split, "train/", random_names(rng, 3), w, h, c);
  std::string msg = error_of([&] { load_png_folder(split.str()); });
  CHECK(contains(msg, "no test/"));
  std::filesystem::create_directories(split.path / "test");
  msg = error_of([&] { load_png_folder(split.str()); });
  CHECK(contains(msg, (split.path / "test").string()));
  CHECK(contains(msg, "no .png files"));
  write_folder(rng, split, "test/", random_names(rng, 2), w + 1, h, c);
  msg = error_of([&] { load_png_folder(split.str()); });
  CHECK(contains(msg, (split.path / "test").string()));
  CHECK(contains(msg, std::to_string(w + 1) + "x" + std::to_string(h)));

  TempDir single;
  write_folder(rng, single, "", random_names(rng, 1), w, h, c);
  msg = error_of([&] { load_png_folder(single.str()); });
  CHECK(contains(msg, single.str()));
  CHECK(contains(msg, "at least 2"));
}
