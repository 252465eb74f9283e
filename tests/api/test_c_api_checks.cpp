// lt.h's smaller promises (issue 45): the header's version macros are the
// library's version; lt_image_draw refuses positions outside
// 1..positions; a model of the wrong family is named with its article ("an
// image model"); a run through the API records a command line that says so,
// with its recipe and its resumes.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "c_api_util.h"
#include "io/safetensors.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("lt.h: LT_VERSION_MAJOR, _MINOR and _PATCH are lt_version()'s number") {
  int major = -1, minor = -1, patch = -1;
  REQUIRE(std::sscanf(lt_version(), "%d.%d.%d", &major, &minor, &patch) == 3);
  CHECK(major == LT_VERSION_MAJOR);
  CHECK(minor == LT_VERSION_MINOR);
  CHECK(patch == LT_VERSION_PATCH);
  const std::string number = std::to_string(LT_VERSION_MAJOR) + "." + std::to_string(LT_VERSION_MINOR) + "." +
                             std::to_string(LT_VERSION_PATCH) + " (";
  CHECK(std::string(lt_version()).rfind(number, 0) == 0);
}

TEST_CASE("lt_image_draw refuses a position outside 1..positions, and draws at every one inside") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Model model(tiny_image_checkpoint(dir, "m.safetensors", 5, 4, 1, AttentionKind::linear, seed));
  lt_model_info info;
  REQUIRE(lt_model_get_info(model.m, &info) == LT_OK);
  const int64_t rows = 3, P = info.positions;
  std::vector<float> heads(size_t(rows * info.head_width));
  for (float& h : heads) h = float(rng.uniform(-2, 2));
  std::vector<int32_t> bytes(size_t(rows), -7);
  std::vector<int64_t> outside = {0, -1, P + 1, P + 2, INT64_MIN, INT64_MAX};
  for (int i = 0; i < 10; ++i) outside.push_back(rng.integer(0, 1) ? -rng.integer(1, 1 << 30) : P + rng.integer(1, 1 << 30));
  for (int64_t position : outside) {
    INFO("position ", position);
    CHECK(lt_image_draw(model.m, heads.data(), rows, seed, position, bytes.data()) == LT_ERROR_ARGUMENT);
    CHECK(std::string(lt_last_error()) == "lt_image_draw: position must be in 1.." + std::to_string(P) +
                                              " (the subpixel drawn after the first), got " + std::to_string(position));
    CHECK(bytes == std::vector<int32_t>(size_t(rows), -7));  // nothing written
  }
  for (int64_t position : {int64_t(1), P, rng.integer(1, P)}) {
    INFO("position ", position);
    REQUIRE(lt_image_draw(model.m, heads.data(), rows, seed, position, bytes.data()) == LT_OK);
    for (int32_t b : bytes) CHECK((b >= 0 && b <= 255));
  }
}

TEST_CASE("a model of another family is named with its article: an image model, a speech model") {
  TempDir dir;
  const std::string image = tiny_image_checkpoint(dir, "m.safetensors");
  lt_recognizer* r = nullptr;
  CHECK(lt_recognizer_new(image.c_str(), nullptr, &r) == LT_ERROR);
  CHECK(std::string(lt_last_error()) == image + ": an image model, not a speech model (lt.model=speech)");
  const std::string speech = std::string(LT_WEIGHTS_DIR) + "/asr-stream.safetensors";
  lt_model* m = nullptr;
  CHECK(lt_model_load(speech.c_str(), nullptr, &m) == LT_ERROR);
  CHECK(std::string(lt_last_error()).rfind(speech + ": a speech model, not an image or copy model", 0) == 0);
  CHECK(with_article("image") == "an image");
  CHECK(with_article("copy") == "a copy");
}

TEST_CASE("an API run records a command line saying it came through lt.h, with its recipe and its resumes") {
  TempDir dir;
  OneThread one;
  const std::string out = dir.file("api run.safetensors");
  const int64_t steps = fresh_seed() % 3 + 1;
  // A path with a space is quoted as a shell would need it.
  const std::string started = "lt_train --task copy --layers 1 --d-model 16 --heads 2 --batch 4 --quiet true --output '" +
                              out + "' --steps " + std::to_string(steps);
  {
    lt_recipe* r = nullptr;
    REQUIRE(lt_recipe_new("copy", &r) == LT_OK);
    for (const auto& [o, v] : std::vector<std::pair<std::string, std::string>>{
             {"layers", "1"}, {"d-model", "16"}, {"heads", "2"}, {"batch", "4"}, {"quiet", "true"}, {"output", out},
             {"steps", std::to_string(steps)}})
      REQUIRE(lt_recipe_set(r, o.c_str(), v.c_str()) == LT_OK);
    CHECK(lt_recipe_set(r, "steps", "-3") == LT_ERROR);  // a refused value is not part of the command
    lt_train_result result;
    REQUIRE_MESSAGE(lt_train(r, nullptr, nullptr, nullptr, &result) == LT_OK, std::string(lt_last_error()));
    lt_string_free(result.score);
    lt_recipe_free(r);
  }
  Checkpoint ck = load_safetensors(out);
  CHECK(ck.meta("lt.train.command") == started);
  CHECK(ck.metadata.count("lt.train.resumed_with") == 0);
  // Resumed twice through the API: the first command stays, the resumes follow it.
  std::string resumes;
  for (int64_t more : {steps + 1, steps + 2}) {
    lt_recipe* r = nullptr;
    REQUIRE(lt_recipe_new("copy", &r) == LT_OK);
    REQUIRE(lt_recipe_set(r, "output", out.c_str()) == LT_OK);
    REQUIRE(lt_recipe_set(r, "resume", "true") == LT_OK);
    REQUIRE(lt_recipe_set(r, "steps", std::to_string(more).c_str()) == LT_OK);
    REQUIRE(lt_recipe_set(r, "quiet", "true") == LT_OK);
    lt_train_result result;
    REQUIRE_MESSAGE(lt_train(r, nullptr, nullptr, nullptr, &result) == LT_OK, std::string(lt_last_error()));
    lt_string_free(result.score);
    lt_recipe_free(r);
    resumes += std::string(resumes.empty() ? "" : "; ") + "lt_train --task copy --output '" + out +
               "' --resume true --steps " + std::to_string(more) + " --quiet true";
  }
  ck = load_safetensors(out);
  CHECK(ck.meta("lt.train.command") == started);
  CHECK(ck.meta("lt.train.resumed_with") == resumes);
  CHECK(ck.meta_int("lt.train.step") == steps + 2);
}
