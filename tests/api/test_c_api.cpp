// The C API (lt.h) against the library it wraps and the tools: stepping a
// state equals the parallel pass, a chunk equals its steps, fork / reset /
// save / load give back the same numbers, a state refuses another model,
// images drawn through the state are lt-sample-image's, and every failure
// is a status and one line.
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "api/c_api_util.h"
#include "apps/cli.h"
#include "backend/device.h"
#include "io/png.h"
#include "lt.h"
#include "model/image_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

lt_model_info info_of(lt_model* m) {
  lt_model_info info;
  REQUIRE(lt_model_get_info(m, &info) == LT_OK);
  return info;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
  return worst;
}

}  // namespace

TEST_CASE("lt.h: a state stepped position by position gives the parallel pass's outputs, and a chunk its steps") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Model model(tiny_image_checkpoint(dir, "m.safetensors", 4, 3, 1, AttentionKind::linear, seed));
  const lt_model_info info = info_of(model.m);
  CHECK(std::string(info.family) == "image");
  CHECK(info.height == 4);
  CHECK(info.positions == 4 * 3 - 1);
  CHECK(info.layers >= 1);
  CHECK(std::string(info.attention) == "causal-linear");
  CHECK(std::string(info.device).size() > 0);  // the CPU's model name
  CHECK(std::string(info.precision) == "products fp32, state fp32, head fp32");
  const int64_t B = 3, L = info.positions, W = info.head_width;
  const std::vector<int32_t> tokens = random_tokens(rng, B * L);

  // The reference: the model's parallel pass over the whole rows.
  auto direct = ImageModel::load(dir.file("m.safetensors"), Device::cpu);
  SequenceBatch batch;
  batch.rows = B, batch.length = L, batch.inputs = tokens, batch.targets = tokens;
  const std::vector<float> parallel = direct->core().predict(batch, ForwardOptions{}).to_vector();  // [B, L, W]

  State state;
  REQUIRE(lt_state_new(model.m, B, &state.s) == LT_OK);
  std::vector<float> stepped(static_cast<size_t>(B * L * W)), head(static_cast<size_t>(B * W));
  for (int64_t t = 0; t < L; ++t) {
    std::vector<int32_t> column(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) column[size_t(b)] = tokens[size_t(b * L + t)];
    REQUIRE(lt_state_step(state.s, column.data(), head.data()) == LT_OK);
    for (int64_t b = 0; b < B; ++b)
      std::copy(head.begin() + b * W, head.begin() + (b + 1) * W, stepped.begin() + (b * L + t) * W);
  }
  CHECK(lt_state_position(state.s) == L);
  CHECK(max_abs_diff(stepped, parallel) < 1e-4);

  // A chunk: the first 5 positions at once, then the rest stepped, equal the steps.
  State chunked;
  REQUIRE(lt_state_new(model.m, B, &chunked.s) == LT_OK);
  const int64_t k = 5;
  std::vector<int32_t> first(static_cast<size_t>(B * k));
  for (int64_t b = 0; b < B; ++b) std::copy(tokens.begin() + b * L, tokens.begin() + b * L + k, first.begin() + b * k);
  std::vector<float> heads(static_cast<size_t>(B * k * W));
  REQUIRE(lt_state_continue(chunked.s, first.data(), k, heads.data()) == LT_OK);
  CHECK(lt_state_position(chunked.s) == k);
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < k * W; ++i)
      worst = std::max(worst, std::fabs(double(heads[size_t(b * k * W + i)]) - double(stepped[size_t(b * L * W + i)])));
  CHECK(worst < 1e-4);

  // Past the model's last position: refused, the state unchanged.
  CHECK(lt_state_step(state.s, tokens.data(), head.data()) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("would pass the model's") != std::string::npos);
  CHECK(lt_state_position(state.s) == L);
}

TEST_CASE("lt.h: fork, reset, save and load give back the state's numbers, and another model's state is refused") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Model model(tiny_image_checkpoint(dir, "m.safetensors", 5, 4, 1, AttentionKind::linear, seed));
  const int64_t B = 2, W = info_of(model.m).head_width;
  State state;
  REQUIRE(lt_state_new(model.m, B, &state.s) == LT_OK);
  std::vector<float> head(static_cast<size_t>(B * W)), a(static_cast<size_t>(B * W)), b(static_cast<size_t>(B * W));
  for (int i = 0; i < 6; ++i) REQUIRE(lt_state_step(state.s, random_tokens(rng, B).data(), head.data()) == LT_OK);

  // A fork continues as the original would; stepping the fork leaves the original.
  State fork;
  REQUIRE(lt_state_fork(state.s, &fork.s) == LT_OK);
  CHECK(lt_state_position(fork.s) == 6);
  const std::vector<int32_t> next = random_tokens(rng, B);
  REQUIRE(lt_state_step(fork.s, next.data(), a.data()) == LT_OK);
  REQUIRE(lt_state_step(fork.s, random_tokens(rng, B).data(), head.data()) == LT_OK);

  // Saved and loaded, the state continues with the same bits.
  const std::string saved = dir.file("state.safetensors");
  REQUIRE(lt_state_save(state.s, saved.c_str()) == LT_OK);
  State loaded;
  REQUIRE_MESSAGE(lt_state_load(model.m, saved.c_str(), &loaded.s) == LT_OK, std::string(lt_last_error()));
  CHECK(lt_state_position(loaded.s) == 6);
  CHECK(lt_state_batch(loaded.s) == B);
  REQUIRE(lt_state_step(state.s, next.data(), b.data()) == LT_OK);
  CHECK(a == b);
  REQUIRE(lt_state_step(loaded.s, next.data(), b.data()) == LT_OK);
  CHECK(a == b);

  // As bytes: the same state, and a cut copy refused in one line.
  uint8_t* bytes = nullptr;
  size_t size = 0;
  REQUIRE(lt_state_to_bytes(fork.s, &bytes, &size) == LT_OK);
  State from_bytes;
  REQUIRE_MESSAGE(lt_state_from_bytes(model.m, bytes, size, &from_bytes.s) == LT_OK, std::string(lt_last_error()));
  CHECK(lt_state_position(from_bytes.s) == lt_state_position(fork.s));
  REQUIRE(lt_state_step(fork.s, next.data(), a.data()) == LT_OK);
  REQUIRE(lt_state_step(from_bytes.s, next.data(), b.data()) == LT_OK);
  CHECK(a == b);
  State cut;
  CHECK(lt_state_from_bytes(model.m, bytes, size - 5, &cut.s) == LT_ERROR);
  CHECK(cut.s == nullptr);
  CHECK(std::string(lt_last_error()).rfind("state bytes: ", 0) == 0);
  lt_bytes_free(bytes);

  // Reset: position 0 and the outputs of a new state.
  State fresh;
  REQUIRE(lt_state_new(model.m, B, &fresh.s) == LT_OK);
  REQUIRE(lt_state_reset(state.s) == LT_OK);
  CHECK(lt_state_position(state.s) == 0);
  REQUIRE(lt_state_step(state.s, next.data(), a.data()) == LT_OK);
  REQUIRE(lt_state_step(fresh.s, next.data(), b.data()) == LT_OK);
  CHECK(a == b);

  // Another model's weights, and another architecture: one line naming the file.
  Model other(tiny_image_checkpoint(dir, "other.safetensors", 5, 4, 1, AttentionKind::linear, seed + 1));
  State wrong;
  CHECK(lt_state_load(other.m, saved.c_str(), &wrong.s) == LT_ERROR);
  CHECK(wrong.s == nullptr);
  CHECK(std::string(lt_last_error()).find(saved) != std::string::npos);
  CHECK(std::string(lt_last_error()).find("other weights") != std::string::npos);
  Model taller(tiny_image_checkpoint(dir, "taller.safetensors", 6, 4, 1, AttentionKind::linear, seed));
  CHECK(lt_state_load(taller.m, saved.c_str(), &wrong.s) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("a state of another model") != std::string::npos);
  // A model file is not a state.
  CHECK(lt_state_load(model.m, dir.file("m.safetensors").c_str(), &wrong.s) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("not a saved state") != std::string::npos);
}

TEST_CASE("lt.h: images drawn through the state and lt_image_sample are lt-sample-image's") {
  TempDir dir;
  const uint64_t seed = fresh_seed() % 100000;
  INFO("seed " << seed);
  const std::string path = tiny_image_checkpoint(dir, "m.safetensors", 4, 4, 1, AttentionKind::linear, seed);
  Model model(path);
  const lt_model_info info = info_of(model.m);
  const int64_t n = 3, S = info.height * info.width * info.channels;
  std::vector<uint8_t> sampled(static_cast<size_t>(n * S));
  lt_image_options options = lt_image_default_options();
  options.seed = seed;
  REQUIRE(lt_image_sample(model.m, n, &options, sampled.data(), nullptr) == LT_OK);

  const CommandResult r = run_tool(dir, "lt-sample-image", "-m '" + path + "' -n 3 -b 3 -s " + std::to_string(seed) +
                                                                " -q --out-dir '" + dir.file("png") + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("png"))) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 3);
  for (int64_t i = 0; i < n; ++i) {
    const Image png = read_png(files[size_t(i)]);
    CHECK(png.pixels == std::vector<uint8_t>(sampled.begin() + i * S, sampled.begin() + (i + 1) * S));
  }

  // The same images by hand: step, then draw the next subpixel (the first is
  // 0: this model has no histogram of first subpixels).
  State state;
  REQUIRE(lt_state_new(model.m, n, &state.s) == LT_OK);
  std::vector<int32_t> pixel(size_t(n), 0);
  std::vector<float> head(static_cast<size_t>(n * info.head_width));
  std::vector<uint8_t> by_hand(size_t(n * S), 0);
  for (int64_t t = 0; t < info.positions; ++t) {
    REQUIRE(lt_state_step(state.s, pixel.data(), head.data()) == LT_OK);
    REQUIRE(lt_image_draw(model.m, head.data(), n, splitmix64(seed), t + 1, pixel.data()) == LT_OK);
    for (int64_t b = 0; b < n; ++b) by_hand[size_t(b * S + t + 1)] = uint8_t(pixel[size_t(b)]);
  }
  CHECK(by_hand == sampled);
}

namespace {
struct Call {
  int64_t first, rows, subpixel;
  std::vector<uint8_t> pixels;
};
void record(int64_t first, int64_t rows, int64_t subpixel, const uint8_t* pixels, void* user) {
  auto& calls = *static_cast<std::vector<Call>*>(user);
  calls.push_back({first, rows, subpixel, {}});
  calls.back().pixels.assign(pixels, pixels + rows * 4 * 4);  // the test model's 4x4x1 images
}
}  // namespace

TEST_CASE("lt.h: batches draw from seed + j, progress sees each subpixel, bits/dim is each image's likelihood") {
  TempDir dir;
  const uint64_t seed = fresh_seed() % 100000;
  INFO("seed " << seed);
  const std::string path = tiny_image_checkpoint(dir, "m.safetensors", 4, 4, 1, AttentionKind::linear, seed);
  Model model(path);
  const int64_t n = 5, batch = 2, S = 16;
  std::vector<Call> calls;
  lt_image_options o = lt_image_default_options();
  o.seed = seed, o.batch = batch, o.progress = record, o.user = &calls;
  std::vector<uint8_t> images(static_cast<size_t>(n * S));
  std::vector<double> bits(static_cast<size_t>(n));
  REQUIRE(lt_image_sample(model.m, n, &o, images.data(), bits.data()) == LT_OK);

  // Batch j is a call of its own from seed + j; the last, of one image, is computed at the batch's size.
  for (int64_t j = 0; j * batch < n; ++j) {
    lt_image_options alone = lt_image_default_options();
    alone.seed = seed + uint64_t(j);
    std::vector<uint8_t> two(size_t(batch * S));
    REQUIRE(lt_image_sample(model.m, batch, &alone, two.data(), nullptr) == LT_OK);
    const int64_t rows = std::min(batch, n - j * batch);
    CHECK(std::equal(two.begin(), two.begin() + rows * S, images.begin() + j * batch * S));
  }
  // Progress: per batch, subpixels in order up to the last, whose pixels are the batch's images.
  REQUIRE(!calls.empty());
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    CHECK(c.rows == std::min(batch, n - c.first));
    if (i + 1 < calls.size() && calls[i + 1].first == c.first) CHECK(calls[i + 1].subpixel > c.subpixel);
    if (i + 1 == calls.size() || calls[i + 1].first != c.first) {
      CHECK(c.subpixel == S - 1);
      CHECK(std::equal(c.pixels.begin(), c.pixels.end(), images.begin() + c.first * S));
    }
  }
  CHECK(calls.back().first == 4);

  // bits/dim against the parallel pass over the finished images, and as lt-sample-image prints it.
  auto image_model = ImageModel::load(path, Device::cpu);
  Tensor nll = Tensor::empty({n, S - 1});
  image_model->core().forward(image_model->batch(Tensor::from_vector(std::vector<int32_t>(images.begin(), images.end()), {n, S})), {}, &nll);
  const std::vector<float> per_subpixel = nll.to_vector();
  const CommandResult r = run_tool(dir, "lt-sample-image", "-m '" + path + "' -n 5 -b 2 -q -s " + std::to_string(seed));
  REQUIRE(r.exit_code == 0);
  std::istringstream printed(r.out);
  for (int64_t i = 0; i < n; ++i) {
    double nats = 0;
    for (int64_t t = 0; t < S - 1; ++t) nats += per_subpixel[size_t(i * (S - 1) + t)];
    CHECK(bits[size_t(i)] == doctest::Approx(nats / double(S - 1) / std::log(2.0)).epsilon(1e-5));
    std::string line;
    std::getline(printed, line);
    char want[64];
    std::snprintf(want, sizeof want, "sample %lld: %.4f bits/dim", (long long)i, bits[size_t(i)]);
    CHECK(line == want);
  }
}

TEST_CASE("lt.h: completions keep the known pixels and are lt-complete's") {
  TempDir dir;
  const uint64_t seed = fresh_seed() % 100000;
  INFO("seed " << seed);
  Rng rng(seed);
  const std::string path = tiny_image_checkpoint(dir, "m.safetensors", 5, 4, 1, AttentionKind::linear, seed);
  Model model(path);
  const int64_t S = 5 * 4, rows = 2, count = 3;
  Image image;
  image.width = 4, image.height = 5, image.channels = 1;
  for (int64_t i = 0; i < S; ++i) image.pixels.push_back(uint8_t(rng.integer(0, 255)));
  const std::string png = dir.file("in.png");
  write_png(png, image);
  std::vector<uint8_t> known(static_cast<size_t>(S), 0);
  for (int64_t i = 0; i < rows * 4; ++i) known[size_t(i)] = 1;
  std::vector<uint8_t> out(static_cast<size_t>(count * S));
  lt_image_options options = lt_image_default_options();
  options.seed = seed;
  REQUIRE(lt_image_complete(model.m, image.pixels.data(), known.data(), count, &options, out.data()) == LT_OK);
  for (int64_t k = 0; k < count; ++k)
    for (int64_t i = 0; i < rows * 4; ++i) CHECK(out[size_t(k * S + i)] == image.pixels[size_t(i)]);

  const CommandResult r = run_tool(dir, "lt-complete", "-m '" + path + "' -n 3 --keep-rows 2 -s " +
                                                            std::to_string(seed) + " -q --out-dir '" + dir.file("out") +
                                                            "' '" + png + "'");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  for (int64_t k = 0; k < count; ++k) {
    const Image c = read_png(dir.file("out/in_completion_" + std::to_string(k) + ".png"));
    CHECK(c.pixels == std::vector<uint8_t>(out.begin() + k * S, out.begin() + (k + 1) * S));
  }
}

TEST_CASE("lt.h: a model loaded at bf16 steps a bf16 state that tracks fp32, and a saved state keeps its precision") {
  if (!cpu_has_bf16()) {
    std::printf("LT-SKIP: this CPU lacks AVX512_BF16\n");
    return;
  }
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::string path = tiny_image_checkpoint(dir, "m.safetensors", 4, 4, 1, AttentionKind::linear, seed);
  Model fp32(path), bf16(path, "cpu", "bf16");
  const lt_model_info info = info_of(bf16.m);
  CHECK(std::string(info.precision) == "products bf16, state bf16, head fp32");
  const int64_t B = 2, T = 9, W = info.head_width;
  State a, b;
  REQUIRE(lt_state_new(fp32.m, B, &a.s) == LT_OK);
  REQUIRE(lt_state_new(bf16.m, B, &b.s) == LT_OK);
  std::vector<float> ha(size_t(B * W)), hb(ha.size()), all_a, all_b;
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<int32_t> tokens = random_tokens(rng, B);
    REQUIRE(lt_state_step(a.s, tokens.data(), ha.data()) == LT_OK);
    REQUIRE(lt_state_step(b.s, tokens.data(), hb.data()) == LT_OK);
    all_a.insert(all_a.end(), ha.begin(), ha.end());
    all_b.insert(all_b.end(), hb.begin(), hb.end());
  }
  CHECK(all_a != all_b);                          // bf16 really ran
  CHECK(max_abs_diff(all_a, all_b) < 0.1);        // and tracks fp32
  // The bf16 state's file continues in a bf16 model only.
  const std::string saved = dir.file("bf16-state.safetensors");
  REQUIRE(lt_state_save(b.s, saved.c_str()) == LT_OK);
  State again, wrong;
  REQUIRE_MESSAGE(lt_state_load(bf16.m, saved.c_str(), &again.s) == LT_OK, std::string(lt_last_error()));
  CHECK(lt_state_position(again.s) == T);
  CHECK(lt_state_load(fp32.m, saved.c_str(), &wrong.s) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("bf16-state.safetensors: a state whose S is bf16") != std::string::npos);
}

TEST_CASE("lt.h: every failure is a status and one line, and no exception crosses it") {
  TempDir dir;
  lt_model* m = reinterpret_cast<lt_model*>(1);
  CHECK(lt_model_load(dir.file("missing.safetensors").c_str(), nullptr, &m) == LT_ERROR);
  CHECK(m == nullptr);
  CHECK(std::string(lt_last_error()).find("missing.safetensors") != std::string::npos);
  m = reinterpret_cast<lt_model*>(1);
  CHECK(lt_model_load(nullptr, nullptr, &m) == LT_ERROR_ARGUMENT);
  CHECK(m == nullptr);
  CHECK(std::string(lt_last_error()) == "path is NULL");
  const std::string path = tiny_image_checkpoint(dir, "m.safetensors");
  auto load = [&](const char* device, const char* precision) {
    const lt_model_options o{device, precision};
    return lt_model_load(path.c_str(), &o, &m);
  };
  CHECK(load("tpu", "fp32") == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("tpu") != std::string::npos);
  CHECK(load("cpu", "tf32") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--tf32 is a CUDA option (the CPU has --bf16)");
  CHECK(load("cpu", "fp8") == LT_ERROR_ARGUMENT);
  CHECK(std::string(lt_last_error()).find("\"fp8\" is not a precision") != std::string::npos);
  write_bytes(dir.file("junk.safetensors"), std::vector<uint8_t>(100, 7));
  CHECK(lt_model_load(dir.file("junk.safetensors").c_str(), nullptr, &m) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("junk.safetensors") != std::string::npos);
  if (!built_with_cuda() || !cuda_available()) {
    CHECK(load("cuda", "fp32") == LT_ERROR);
    CHECK(!std::string(lt_last_error()).empty());
  }
  Model model(path);
  lt_state* s = nullptr;
  CHECK(lt_state_new(model.m, 0, &s) == LT_ERROR_ARGUMENT);
  CHECK(std::string(lt_last_error()).find("batch must be >= 1") != std::string::npos);
  CHECK(lt_state_step(nullptr, nullptr, nullptr) == LT_ERROR_ARGUMENT);
  CHECK(lt_image_sample(model.m, 1, nullptr, nullptr, nullptr) == LT_ERROR_ARGUMENT);
  lt_state_free(nullptr);
  lt_model_free(nullptr);
  CHECK(std::string(lt_version()).find(build_version()) == 0);
}

TEST_CASE("liblt.so exports the C API of lt.h and nothing else") {
  TempDir dir;
  const CommandResult r = run_program(dir, "/usr/bin/nm", "-D --defined-only '" + std::string(LT_SHARED_LIBRARY) + "'");
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.out);
  int64_t api = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(line.rfind(' ') + 1);
    INFO("exported: " << name);
    CHECK(name.rfind("lt_", 0) == 0);
    api += name.rfind("lt_", 0) == 0;
  }
  CHECK(api >= 17);
}
