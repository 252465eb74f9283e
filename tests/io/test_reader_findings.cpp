// Regression tests for what fuzzing the readers found (docs/reliability.md):
// each reproducer, byte for byte, must be one lt::Error line naming the file.
#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include "io/image_dataset.h"
#include "io/png.h"
#include "io/safetensors.h"
#include "io/stored_deflate.h"
#include "io/temp_dir.h"
#include "model/image_model.h"
#include "speech/arpa_reference.h"
#include "speech/language_model.h"
#include "speech/random_speech_model.h"
#include "train/copy_task.h"

using namespace lt;
using namespace lt::test;

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(uint8_t(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// The message contract of every reader: an lt::Error (no other type), one
// line, starting with the file's path.
template <class F>
std::string contract_error(const std::string& path, F&& read) {
  const std::string msg = error_of(read);
  CHECK(msg.rfind(path, 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  return msg;
}

std::vector<uint8_t> safetensors_bytes(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out;
  for (int shift = 0; shift < 64; shift += 8) out.push_back(uint8_t(uint64_t(header.size()) >> shift));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes);
  return out;
}

const std::vector<uint8_t> kPngSignature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

std::vector<uint8_t> ihdr(uint32_t width, uint32_t height, uint8_t depth, uint8_t colour_type) {
  std::vector<uint8_t> out;
  put_be32(out, width);
  put_be32(out, height);
  out.insert(out.end(), {depth, colour_type, 0, 0, 0});
  return out;
}

}  // namespace

TEST_CASE("read_png: a chunk length of 2^31 or more is an error, not a crash (NULL stb reason)") {
  TempDir tmp;
  const std::string path = tmp.file("long-chunk.png");
  // 41 bytes from the outside fuzz run: lt-complete exited 139 on it.
  write_bytes(path, from_hex("89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b558000000049444154"));
  const std::string msg = contract_error(path, [&] { read_png(path); });
  CHECK(msg.find("IDAT") != std::string::npos);
}

TEST_CASE("read_png: stb's reason quoting an unknown chunk type with a newline stays on one line") {
  TempDir tmp;
  // Found by fuzz_png (a 175-byte file; this is the same case cut down): a
  // critical chunk type "IG\r\n" is echoed raw in stb's failure reason.
  std::vector<uint8_t> bytes = kPngSignature;
  png_chunk(bytes, "IHDR", ihdr(1, 1, 8, 0));
  png_chunk(bytes, "IG\r\n", {});
  png_chunk(bytes, "IEND", {});
  const std::string path = tmp.file("chunk-type.png");
  write_bytes(path, bytes);
  CHECK(contract_error(path, [&] { read_png(path); }).find("IG\\r\\n") != std::string::npos);
}

TEST_CASE("read_png: declared sizes are checked before stb allocates for them") {
  TempDir tmp;
  SUBCASE("16384 x 16384 RGBA (1 GiB) declared by a 69-byte file") {
    std::vector<uint8_t> bytes = kPngSignature;
    png_chunk(bytes, "IHDR", ihdr(16384, 16384, 8, 6));
    png_chunk(bytes, "IDAT", {0x78, 0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00});
    png_chunk(bytes, "IEND", {});
    REQUIRE(bytes.size() == 69);
    const std::string path = tmp.file("huge.png");
    write_bytes(path, bytes);
    CHECK(contract_error(path, [&] { read_png(path); }).find("16384x16384") != std::string::npos);
  }
  SUBCASE("a small image whose few bytes of data cannot hold its declared pixels") {
    std::vector<uint8_t> bytes = kPngSignature;
    png_chunk(bytes, "IHDR", ihdr(4096, 4096, 8, 2));  // 48 MiB, under the size cap
    png_chunk(bytes, "IDAT", {0x78, 0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01});
    png_chunk(bytes, "IEND", {});
    const std::string path = tmp.file("thin.png");
    write_bytes(path, bytes);
    CHECK(contract_error(path, [&] { read_png(path); }).find("compressed image data") != std::string::npos);
  }
  SUBCASE("an IDAT length of 0x7fffffff (stb would realloc 2 GiB)") {
    std::vector<uint8_t> bytes = kPngSignature;
    png_chunk(bytes, "IHDR", ihdr(1, 1, 8, 0));
    put_be32(bytes, 0x7fffffff);
    for (char c : std::string("IDAT")) bytes.push_back(uint8_t(c));
    bytes.insert(bytes.end(), 16, 0);
    const std::string path = tmp.file("long-idat.png");
    write_bytes(path, bytes);
    CHECK(contract_error(path, [&] { read_png(path); }).find("2147483647") != std::string::npos);
  }
  SUBCASE("a valid image still reads") {
    const std::string path = tmp.file("ok.png");
    write_bytes(path, png_stored(3, 2, 4, std::vector<uint16_t>(24, 7)));
    const Image img = read_png(path);
    CHECK(img.width == 3);
    CHECK(img.height == 2);
  }
}

TEST_CASE("read_png: an empty first IDAT chunk (stb forms null + 0) decodes or fails cleanly") {
  TempDir tmp;
  // Found by fuzz_png in CI (clang's UBSan, inside stb): an IDAT of length 0
  // before any other makes stb offset its still-null buffer by 0. The spec
  // allows empty IDAT chunks, so a file with one before its data must read.
  std::mt19937 rng(std::random_device{}());
  std::vector<uint16_t> samples(5 * 3 * 3);
  for (uint16_t& s : samples) s = uint16_t(rng() % 256);
  std::vector<uint8_t> bytes = png_stored(5, 3, 3, samples);
  const size_t after_ihdr = kPngSignature.size() + 8 + 13 + 4;
  std::vector<uint8_t> empty_idat;
  png_chunk(empty_idat, "IDAT", {});
  bytes.insert(bytes.begin() + long(after_ihdr), empty_idat.begin(), empty_idat.end());
  const std::string path = tmp.file("empty-idat.png");
  write_bytes(path, bytes);
  const Image img = read_png(path);
  REQUIRE(img.pixels.size() == samples.size());
  for (size_t i = 0; i < samples.size(); ++i) CHECK(img.pixels[i] == samples[i]);

  SUBCASE("the fuzzer's reproducer: only an empty IDAT") {
    const std::string bad = tmp.file("only-empty-idat.png");
    write_bytes(bad, from_hex("89504e470d0a1a0a0000000d49484452000000050000000308020000"
                              "00d45452af0000000049444154000000000000000049454e44ae426082"));
    contract_error(bad, [&] { read_png(bad); });
  }
}

TEST_CASE("read_idx_images: count x rows x cols that wraps past 2^64 is an error") {
  TempDir tmp;
  // 4 images of 2^31 x 2^31 pixels: 2^64 bytes wrapped to 0 and was accepted.
  const std::vector<uint8_t> bytes = from_hex("00000803000000048000000080000000");
  const std::string plain = tmp.file("wrap-idx3-ubyte"), gz = tmp.file("wrap-idx3-ubyte.gz");
  write_bytes(plain, bytes);
  write_bytes(gz, gzip_stored(bytes));
  for (const std::string& path : {plain, gz}) {
    INFO(path);
    CHECK(contract_error(path, [&] { read_idx_images(path); }).find("corrupt header") != std::string::npos);
  }
  // And through the loader lt-train calls.
  write_bytes(tmp.file("data/train-images-idx3-ubyte"), bytes);
  write_bytes(tmp.file("data/t10k-images-idx3-ubyte"), bytes);
  const std::string dir = (tmp.path / "data").string();
  CHECK(error_of([&] { load_image_dataset(dir); }).find("corrupt header") != std::string::npos);
}

TEST_CASE("load_safetensors: header numbers out of double range are an lt::Error") {
  TempDir tmp;
  const std::string path = tmp.file("overflow.safetensors");
  write_bytes(path, safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})", 4));
  CHECK(contract_error(path, [&] { load_safetensors(path); }).find("JSON") != std::string::npos);
}

TEST_CASE("load_safetensors: names with control characters are escaped onto one line") {
  TempDir tmp;
  const std::string path = tmp.file("newline.safetensors");
  write_bytes(path, safetensors_bytes(R"({"a\nb\u0001":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}})", 1));
  const std::string msg = contract_error(path, [&] { load_safetensors(path); });
  CHECK(msg.find("a\\nb\\x01") != std::string::npos);
}

TEST_CASE("load_safetensors: deeply nested values are described, not dumped recursively") {
  TempDir tmp;
  const std::string path = tmp.file("deep.safetensors");
  const int depth = 200000;
  const std::string shape = std::string(depth, '[') + std::string(depth, ']');
  write_bytes(path, safetensors_bytes(R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,4]}})", 4));
  const std::string msg = contract_error(path, [&] { load_safetensors(path); });
  CHECK(msg.size() < 400);
}

TEST_CASE("read_png_images: a file name holding a newline stays on one line") {
  TempDir tmp;
  const std::string dir = tmp.file("pngs/x");
  const std::string bad = (tmp.path / "pngs" / "bad\nname.png").string();
  write_bytes(bad, {1, 2, 3});
  const std::string msg = error_of([&] { read_png_images({bad}, dir); });
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find("bad\\nname.png") != std::string::npos);
}

TEST_CASE("every reader rejects random and damaged bytes with one line naming the file") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::vector<uint8_t> png = png_stored(3, 2, 3, std::vector<uint16_t>(18, 9));
  for (int trial = 0; trial < 100; ++trial) {
    // Half the trials damage a valid PNG, half are noise behind a valid signature.
    std::vector<uint8_t> bytes = png;
    if (trial % 2) {
      bytes.resize(8);
      const std::vector<uint8_t> noise = random_bytes(rng, rng.integer(0, 200));
      bytes.insert(bytes.end(), noise.begin(), noise.end());
    } else {
      bytes[size_t(rng.integer(8, int64_t(bytes.size()) - 1))] ^= uint8_t(rng.integer(1, 255));
    }
    const std::string path = tmp.file("r" + std::to_string(trial));
    write_bytes(path, bytes);
    auto holds_contract = [&](auto&& read) {
      try {
        read();
      } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.rfind(path, 0) == 0);
        CHECK(msg.find('\n') == std::string::npos);
      }
    };
    holds_contract([&] { read_png(path); });
    holds_contract([&] { load_safetensors(path); });
    holds_contract([&] { read_idx_images(path); });
    holds_contract([&] { read_idx_labels(path); });
    holds_contract([&] { read_cifar10_batches({path}); });
  }
}

namespace {

// A valid checkpoint of each family, saved by lt, and the loader the tools
// call on it.
struct SavedModel {
  std::string path;
  std::function<void(const std::string&)> load;
};

std::vector<SavedModel> saved_models(const TempDir& tmp, uint64_t seed) {
  Rng rng(seed);
  std::vector<SavedModel> out;
  ImageModelConfig image;
  image.height = 3;
  image.width = 2;
  image.mixtures = 2;
  image.transformer = TransformerConfig{1, 2, 8, 16, 32};
  ImageModel im(image, Device::cpu);
  im.core().init_parameters(seed);
  out.push_back({tmp.file("image.safetensors"), [](const std::string& p) { ImageModel::load(p, Device::cpu); }});
  im.core().save(out.back().path);
  CopyTaskConfig copy{16, 5, TransformerConfig{1, 2, 8, 16, 32}};
  SequenceModel cm(copy.sequence_config(), Device::cpu);
  cm.init_parameters(seed);
  out.push_back({tmp.file("copy.safetensors"), [](const std::string& p) { load_copy_model(p, Device::cpu); }});
  cm.save(out.back().path);
  for (const bool lstm : {false, true}) {
    SpeechModel m = lstm ? random_bilstm_speech_model(rng, 16, seed) : random_speech_model(rng, Direction::causal, 16, seed);
    out.push_back({tmp.file(lstm ? "bilstm.safetensors" : "speech.safetensors"),
                   [](const std::string& p) { load_speech_model(p, Device::cpu); }});
    m.model->save(out.back().path, m.frontend.metadata(), m.frontend.tensors());
  }
  return out;
}

bool has_control_byte(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) { return uint8_t(c) < 0x20 || c == 0x7f; });
}

}  // namespace

TEST_CASE("model loaders: control bytes in any metadata value or tensor name are escaped, the message one line") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir tmp;
  const std::string edited = tmp.file("edited.safetensors");
  // The strings the outside campaign found printed raw (issue 36).
  const std::set<std::string> quoted = {"lt.model", "encoder", "direction", "attention", "feature_map", "output_head"};
  for (const SavedModel& saved : saved_models(tmp, seed)) {
    INFO(saved.path);
    saved.load(saved.path);
    const Checkpoint ck = load_safetensors(saved.path);
    for (const auto& entry : ck.metadata) {
      const std::string& key = entry.first;  // not a structured binding: INFO captures it
      for (const std::string& bad : {std::string("a\nb"), entry.second + "\r\n", std::string("\t\x01\x1b[2J\x7f")}) {
        std::map<std::string, std::string> meta = ck.metadata;
        meta[key] = bad;
        save_safetensors(edited, ck.tensors, meta);
        INFO(key);
        try {
          saved.load(edited);
        } catch (const Error& e) {
          const std::string msg = e.what();
          INFO(msg);
          CHECK(msg.rfind(edited, 0) == 0);
          CHECK_FALSE(has_control_byte(msg));
        }
      }
      // Each of the quoted strings is refused when it names nothing lt knows.
      if (quoted.count(key) && key != "direction") {
        std::map<std::string, std::string> meta = ck.metadata;
        meta[key] = "a\nb";
        save_safetensors(edited, ck.tensors, meta);
        INFO(key);
        CHECK(error_of([&] { saved.load(edited); }).find("a\\nb") != std::string::npos);
      }
    }
    std::map<std::string, Tensor> tensors = ck.tensors;
    tensors.emplace("x\ny", Tensor::zeros({1}, Device::cpu));
    save_safetensors(edited, tensors, ck.metadata);
    const std::string msg = error_of([&] { saved.load(edited); });
    CHECK(msg.rfind(edited, 0) == 0);
    CHECK(msg.find("'x\\ny'") != std::string::npos);
    CHECK_FALSE(has_control_byte(msg));
  }
}

TEST_CASE("load_speech_model: fbank.sample_rate and fbank.bins are checked before they are narrowed to int") {
  const uint64_t seed = fresh_seed();
  TempDir tmp;
  const std::string path = saved_models(tmp, seed)[2].path, edited = tmp.file("edited.safetensors");
  const Checkpoint ck = load_safetensors(path);
  // 2^32 + 16000 and 2^32 + 40 read as 16000 and 40 once cast.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{{"fbank.sample_rate", "4294983296"},
                                                                     {"fbank.bins", "4294967336"},
                                                                     {"fbank.sample_rate", "-4294951296"}}) {
    std::map<std::string, std::string> meta = ck.metadata;
    meta[key] = value;
    save_safetensors(edited, ck.tensors, meta);
    const std::string msg = contract_error(edited, [&] { load_speech_model(edited, Device::cpu); });
    CHECK(msg.find(key + " " + value) != std::string::npos);
  }
}

TEST_CASE("read_arpa: a log10 probability whose natural log overflows to -inf is an error, not a score") {
  // fuzz_language_model's reproducer (byte 0 dropped): -1.21e308 is finite in
  // log10 but -inf once scaled, which scoring then took for a damaged model.
  TempDir tmp;
  const std::string path = tmp.file("words.arpa");
  write_text_file(path,
                  "\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n-19 <s> -0.3\n-0.7 </s>\n-1.21e308 <un+>\n"
                  "-0.4 HELLO -.02\n\n\\2-grams:\n-0.1 <s> HELLO\n-0.3 HELLO </s>\n\n\\end\\\n",
                  false);
  const std::string msg = contract_error(path, [&] { read_arpa(path); });
  CHECK(msg.find(":8: '-1.21e308'") != std::string::npos);
}
