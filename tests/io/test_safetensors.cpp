#include "io/safetensors.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace lt;
using namespace lt::test;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed with everything in it.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("lt-safetensors-" + std::to_string(fresh_seed()));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string u64_le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = char((n >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file from a header text and a data buffer, written by hand.
void write_safetensors(const std::string& path, const std::string& header, const std::string& buffer) {
  write_bytes(path, u64_le(header.size()) + header + buffer);
}

std::string halves_le(const std::vector<uint16_t>& v) {
  std::string s;
  for (uint16_t h : v) s += char(h & 0xff), s += char(h >> 8);
  return s;
}

// The loader's message, or "" when it did not throw lt::Error.
std::string load_error(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const lt::Error& e) {
    return e.what();
  }
  return "";
}

// Every rejection is one line that starts with the path and names the problem.
void check_rejected(const std::string& path, const std::string& problem) {
  const std::string message = load_error(path);
  INFO("message: " << message);
  CHECK(message.rfind(path + ": ", 0) == 0);
  CHECK(message.find(problem) != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Independent float64 value of an IEEE half / bfloat16 bit pattern.
double half_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v = exponent == 0    ? mantissa * std::pow(2.0, -24)
             : exponent == 31 ? (mantissa ? std::nan("") : INFINITY)
                              : (1 + mantissa / 1024.0) * std::pow(2.0, exponent - 15);
  return sign ? -v : v;
}
double bfloat16_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 7) & 0xff, mantissa = h & 0x7f;
  double v = exponent == 0     ? mantissa * std::pow(2.0, -133)
             : exponent == 255 ? (mantissa ? std::nan("") : INFINITY)
                               : (1 + mantissa / 128.0) * std::pow(2.0, exponent - 127);
  return sign ? -v : v;
}

// Each float equals the reference exactly, signed zeros included; NaN stays NaN.
void check_exact(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                                  : double(got[i]) == want[i] && std::signbit(got[i]) == std::signbit(want[i]);
    if (!ok && wrong++ < 5) FAIL_CHECK("element " << i << ": got " << got[i] << ", want " << want[i]);
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("safetensors round trip is bitwise exact and follows the format") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::string path = tmp.file("model.safetensors");

  std::map<std::string, Tensor> tensors;
  const int count = int(rng.integer(1, 8));
  for (int i = 0; i < count; ++i) {
    Shape shape(rng.integer(1, 4));
    for (auto& d : shape) d = rng.integer(1, 7);
    tensors["layer." + std::to_string(rng.integer(0, 999)) + ".w"] = rng.randn(shape);
  }
  // Values a float-to-text or narrowing path would change.
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), -1e-40f,
                            std::numeric_limits<float>::max(), INFINITY, -INFINITY, NAN};
  tensors["specials"] = Tensor::from_vector(std::vector<float>(std::begin(specials), std::end(specials)), {8});
  tensors["empty"] = Tensor::empty({0, 3});
  const std::map<std::string, std::string> metadata = {
      {"lt.format_version", "1"}, {"heads", std::to_string(rng.integer(1, 16))}, {"note", "π ≈ 3.14, \"quoted\"\n"}};

  write_bytes(path, "an older file to replace");
  save_safetensors(path, tensors, metadata);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  Checkpoint ck = load_safetensors(path);
  CHECK(ck.path == path);
  CHECK(ck.metadata == metadata);
  REQUIRE(ck.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO("tensor " << name);
    REQUIRE(ck.has(name));
    const Tensor& got = ck.get(name, t.shape());
    CHECK(got.device() == Device::cpu);
    CHECK((t.nbytes() == 0 || std::memcmp(got.raw(), t.raw(), t.nbytes()) == 0));
  }

  // The bytes: an 8-aligned header padded with spaces, F32 entries laid out in name order.
  const std::string bytes = read_bytes(path);
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  CHECK(header_bytes % 8 == 0);
  const std::string text = bytes.substr(8, header_bytes);
  CHECK(text.find_last_not_of(' ') >= text.size() - 8);
  nlohmann::json header = nlohmann::json::parse(text);
  CHECK(header["__metadata__"]["heads"] == metadata.at("heads"));
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    CHECK(header[name]["dtype"] == "F32");
    const auto dims = header[name]["shape"].get<std::vector<int64_t>>();
    CHECK(Shape(dims.begin(), dims.end()) == t.shape());
    CHECK(header[name]["data_offsets"][0].get<uint64_t>() == offset);
    offset += t.nbytes();
    CHECK(header[name]["data_offsets"][1].get<uint64_t>() == offset);
  }
  CHECK(bytes.size() == 8 + header_bytes + offset);
}

TEST_CASE("safetensors reads every F16 and BF16 value exactly beside F32 in offset order") {
  TempDir tmp;
  const std::string path = tmp.file("halves.safetensors");
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  // Named against their offset order, to show the loader follows offsets, not names.
  const float f32[] = {1.5f, -0.0f, 3e-42f};
  std::string f32_bytes(reinterpret_cast<const char*>(f32), sizeof f32);
  const std::string header = R"({"z_f32":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                             R"("b_bf16":{"dtype":"BF16","shape":[256,256],"data_offsets":[12,131084]},)"
                             R"("a_f16":{"dtype":"F16","shape":[256,256],"data_offsets":[131084,262156]},)"
                             R"("scalar":{"dtype":"F16","shape":[],"data_offsets":[262156,262158]}})";
  write_safetensors(path, header, f32_bytes + halves_le(all) + halves_le(all) + halves_le({0x3555}));

  Checkpoint ck = load_safetensors(path);
  CHECK(ck.metadata.empty());
  std::vector<double> want_f16(65536), want_bf16(65536);
  for (size_t i = 0; i < all.size(); ++i) want_f16[i] = half_value(all[i]), want_bf16[i] = bfloat16_value(all[i]);
  check_exact(ck.get("a_f16", {256, 256}).to_vector(), want_f16);
  check_exact(ck.get("b_bf16", {256, 256}).to_vector(), want_bf16);
  check_exact(ck.get("z_f32", {3}).to_vector(), {1.5, -0.0, double(3e-42f)});
  check_exact(ck.get("scalar", {1}).to_vector(), {0.333251953125});

  // Spot checks written out: subnormal, largest, infinities, NaN.
  const std::vector<float> h = ck.get("a_f16", {256, 256}).to_vector();
  CHECK(h[0x0001] == std::ldexp(1.0f, -24));
  CHECK(h[0x03ff] == 1023 * std::ldexp(1.0f, -24));
  CHECK(h[0x8001] == -std::ldexp(1.0f, -24));
  CHECK(h[0x3c00] == 1.0f);
  CHECK(h[0x7bff] == 65504.0f);
  CHECK(h[0x7c00] == INFINITY);
  CHECK(h[0xfc00] == -INFINITY);
  CHECK(std::isnan(h[0x7e00]));
  CHECK(bits_of(h[0x8000]) == 0x80000000u);
  const std::vector<float> b = ck.get("b_bf16", {256, 256}).to_vector();
  CHECK(b[0x4049] == 3.140625f);
  CHECK(b[0x0001] == std::ldexp(1.0f, -133));
  CHECK(bits_of(b[0xc0a0]) == 0xc0a00000u);
}

TEST_CASE("safetensors rejects malformed files with one line naming the file and the problem") {
  TempDir tmp;
  int n = 0;
  // A hand-built file with this header and buffer must be rejected for this problem.
  auto rejects = [&](const std::string& header, const std::string& buffer, const std::string& problem) {
    const std::string path = tmp.file("bad" + std::to_string(n++) + ".safetensors");
    INFO("header: " << header);
    write_safetensors(path, header, buffer);
    check_rejected(path, problem);
  };
  auto raw = [&](const std::string& bytes, const std::string& problem) {
    const std::string path = tmp.file("raw" + std::to_string(n++) + ".safetensors");
    write_bytes(path, bytes);
    check_rejected(path, problem);
  };
  const std::string eight(8, 'x');
  const std::string entry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

  SUBCASE("the file is missing, a directory, truncated or not safetensors") {
    check_rejected(tmp.file("absent.safetensors"), "cannot open: No such file or directory");
    check_rejected(tmp.dir.string(), "is a directory");
    raw(std::string("\x10\0\0\0", 4), "is 4 bytes, too short for the 8-byte header length: truncated");
    raw(u64_le(1000) + "{}", "header length 1000 bytes runs past the end of the file (10 bytes): truncated");
    raw(u64_le(uint64_t(1) << 40) + "{}", "does not look like a safetensors file");
    raw(std::string("\x89PNG\r\n\x1a\n", 8) + std::string(100, '\0'), "does not look like a safetensors file");
    raw(std::string("PK\x03\x04\x14\0\0\0", 8) + std::string(100, '\0'), "zip archive, as torch.save writes");
    raw("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1234\n",
        "is a Git LFS pointer, not the weights: run git lfs pull");
  }
  SUBCASE("the header is not a JSON object") {
    rejects(R"({"a": })", "", "header is not valid JSON (byte 7 of 7)");
    rejects("", "", "header length is 0: not a safetensors file");
    rejects("[1, 2]", "", "header is a JSON array, not an object");
  }
  SUBCASE("a tensor entry lacks a field or has a wrong type") {
    rejects(R"({"w": 3})", "", "tensor 'w' is a JSON number, not an object with dtype, shape and data_offsets");
    rejects(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", eight, "tensor 'w' has no 'dtype'");
    rejects(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", eight, "tensor 'w' has no 'shape'");
    rejects(R"({"w":{"dtype":"F32","shape":[2]}})", eight, "tensor 'w' has no 'data_offsets'");
    rejects(R"({"w":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", eight, "'dtype' must be a string, got 32");
    rejects(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", eight,
            "'shape' must be an array of integers");
    rejects(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", eight,
            "'shape' must be an array of integers, got [2.5]");
    rejects(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", eight,
            "'data_offsets' must be two non-negative integers [begin, end], got [8]");
    rejects(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", eight,
            "'data_offsets' must be two non-negative integers");
  }
  SUBCASE("a dtype, shape or size is wrong") {
    rejects(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", eight,
            "tensor 'w' has dtype 'I64', which lt cannot read (supported: F32, F16, BF16)");
    rejects(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", eight,
            "tensor 'w' has a negative dimension in shape [2,-1]");
    rejects(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", eight,
            "too large to address");
    rejects(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})", eight,
            "tensor 'w' has 9 dimensions; lt's tensors have at most 8");
    rejects(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight,
            "tensor 'w' is F32 of shape [3] = 12 bytes, but its data_offsets [0, 8] hold 8 bytes");
  }
  SUBCASE("the offsets do not tile the buffer") {
    rejects(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight,
            "tensor 'w' has data_offsets [0, 16] past the end of the data buffer (8 bytes)");
    rejects(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight,
            "tensor 'w' has data_offsets [8, 0] that end before they begin");
    rejects(R"({"a":)" + entry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", eight + "yyyy",
            "tensors 'a' [0, 8] and 'b' [4, 12] overlap in the data buffer");
    rejects(R"({"a":)" + entry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
            eight + "hole" + eight, "bytes [8, 12] of the data buffer, before tensor 'b', belong to no tensor");
    rejects(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight,
            "bytes [0, 4] of the data buffer, before tensor 'w', belong to no tensor");
    rejects(R"({"a":)" + entry + "}", eight + "tail", "bytes [8, 12] at the end of the data buffer belong to no tensor");
  }
  SUBCASE("the metadata is not an object of strings") {
    rejects(R"({"__metadata__":{"name":"x","heads":8}})", "", "metadata 'heads' is 8, but metadata values must be strings");
    rejects(R"({"__metadata__":["heads"]})", "", "'__metadata__' is a JSON array, not an object of strings");
  }
}

TEST_CASE("safetensors accepts the spec's edge cases: padding and no tensors and empty tensors") {
  TempDir tmp;
  const std::string path = tmp.file("edge.safetensors");
  write_safetensors(path, R"({"__metadata__":{"k":""},"e":{"dtype":"BF16","shape":[2,0],"data_offsets":[0,0]}})" "   ", "");
  Checkpoint ck = load_safetensors(path);
  CHECK(ck.meta("k") == "");
  CHECK(ck.get("e", {2, 0}).numel() == 0);

  save_safetensors(path, {}, {});
  CHECK(read_bytes(path).size() == 16);  // "{}" padded to 8 bytes
  CHECK(load_safetensors(path).tensors.empty());
}

TEST_CASE("safetensors save is atomic and refuses what it cannot write") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::string path = tmp.file("ckpt.safetensors");
  Tensor w = rng.randn({3, 4});
  save_safetensors(path, {{"w", w}}, {{"model", "lm"}});
  const std::string before = read_bytes(path);

  // A failed save leaves the previous file as it was and no temporary behind.
  auto check_refused = [&](const std::map<std::string, Tensor>& tensors, const std::string& problem) {
    try {
      save_safetensors(path, tensors, {});
      FAIL("save_safetensors did not throw");
    } catch (const lt::Error& e) {
      INFO("message: " << e.what());
      CHECK(std::string(e.what()).rfind(path + ": ", 0) == 0);
      CHECK(std::string(e.what()).find(problem) != std::string::npos);
    }
    CHECK(read_bytes(path) == before);
    CHECK_FALSE(fs::exists(path + ".tmp"));
  };
  check_refused({{"ids", Tensor::zeros({2}, Device::cpu, DType::i32)}}, "tensor 'ids' is int32");
  check_refused({{"__metadata__", w}}, "'__metadata__' is reserved");
  check_refused({{"u", Tensor()}}, "tensor 'u' is undefined");
  check_refused({{std::string("bad\xff", 4), w}}, "not valid UTF-8");

  const std::string nowhere = tmp.file("no/such/dir/x.safetensors");
  CHECK_THROWS_WITH_AS(save_safetensors(nowhere, {{"w", w}}), doctest::Contains((nowhere + ": cannot write").c_str()),
                       lt::Error);

  // Saving over the file replaces it in one step.
  Tensor v = rng.randn({5});
  save_safetensors(path, {{"v", v}}, {});
  CHECK_FALSE(fs::exists(path + ".tmp"));
  Checkpoint ck = load_safetensors(path);
  CHECK_FALSE(ck.has("w"));
  CHECK(ck.get("v", {5}).to_vector() == v.to_vector());
}

TEST_CASE("Checkpoint lookups name the file and the tensor or key and the shapes") {
  TempDir tmp;
  const std::string path = tmp.file("lookups.safetensors");
  save_safetensors(path, {{"transformer.norm.weight", Tensor::zeros({8})}},
                   {{"heads", "4"}, {"layers", "two"}, {"attention", "causal-linear"}});
  Checkpoint ck = load_safetensors(path);

  CHECK_THROWS_WITH_AS(ck.get("transformer.norm.weight", {16}),
                       (path + ": tensor 'transformer.norm.weight' has shape [8], the config needs [16]").c_str(),
                       lt::Error);
  CHECK_THROWS_WITH_AS(ck.get("transformer.norm.bias", {8}),
                       (path + ": missing tensor 'transformer.norm.bias'").c_str(), lt::Error);
  CHECK_FALSE(ck.has("transformer.norm.bias"));
  CHECK(ck.meta("attention") == "causal-linear");
  CHECK(ck.meta("feature_map", "elu") == "elu");
  CHECK(ck.meta_int("heads") == 4);
  CHECK_THROWS_WITH_AS(ck.meta("model"), (path + ": missing metadata 'model'").c_str(), lt::Error);
  CHECK_THROWS_WITH_AS(ck.meta_int("layers"), (path + ": metadata 'layers' is 'two', not an integer").c_str(),
                       lt::Error);
}

TEST_CASE("safetensors in memory: the bytes of a file, read back as the file is, and refused as it is") {
  TempDir dir;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  std::map<std::string, Tensor> tensors;
  for (int i = 0; i < 3; ++i)
    tensors["t" + std::to_string(i)] = rng.randn({rng.integer(1, 9), rng.integer(1, 9)});
  const std::map<std::string, std::string> meta = {{"k", "v"}, {"n", std::to_string(rng.integer(0, 1000))}};
  const std::string path = dir.file("a.safetensors");
  save_safetensors(path, tensors, meta);
  const std::string bytes = safetensors_bytes(tensors, meta);
  CHECK(bytes == read_bytes(path));
  const Checkpoint a = load_safetensors(path), b = parse_safetensors("in memory", bytes.data(), bytes.size());
  CHECK(b.path == "in memory");
  CHECK(b.metadata == a.metadata);
  for (const auto& [name, t] : a.tensors) CHECK(b.get(name, t.shape()).to_vector() == t.to_vector());
  // Cut anywhere: one error naming the bytes, as for a cut file.
  const size_t cut = size_t(rng.integer(0, int64_t(bytes.size()) - 1));
  INFO("cut at " << cut);
  CHECK_THROWS_WITH_AS(parse_safetensors("in memory", bytes.data(), cut), doctest::Contains("in memory: "), lt::Error);
}
