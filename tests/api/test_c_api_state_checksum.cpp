// lt.h: a saved state carries a checksum of its bytes. Thousands of random
// truncations and byte flips of lt_state_to_bytes's output, each refused in
// one line naming "state bytes" (or the file); a state saved without a
// checksum is refused with a line saying why.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "apps/cli.h"
#include "c_api_util.h"
#include "io/safetensors.h"

using namespace lt;
using namespace lt::test;

namespace {

int64_t head_width(lt_model* m) {
  lt_model_info info;
  REQUIRE(lt_model_get_info(m, &info) == LT_OK);
  return info.head_width;
}

std::vector<uint8_t> state_bytes(lt_state* s) {
  uint8_t* bytes = nullptr;
  size_t size = 0;
  REQUIRE(lt_state_to_bytes(s, &bytes, &size) == LT_OK);
  std::vector<uint8_t> out(bytes, bytes + size);
  lt_bytes_free(bytes);
  return out;
}

}  // namespace

TEST_CASE("lt.h: damaged states are refused: random truncations and byte flips of lt_state_to_bytes, none loads") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Model model(tiny_image_checkpoint(dir, "m.safetensors", 5, 4, 1, AttentionKind::linear, seed));
  const int64_t B = 2;
  State state;
  REQUIRE(lt_state_new(model.m, B, &state.s) == LT_OK);
  std::vector<float> head(size_t(B * head_width(model.m)));
  const int64_t steps = rng.integer(1, 12);
  for (int64_t i = 0; i < steps; ++i) REQUIRE(lt_state_step(state.s, random_tokens(rng, B).data(), head.data()) == LT_OK);
  const std::vector<uint8_t> good = state_bytes(state.s);
  {
    State back;  // the bytes as they are load, at the state's position
    REQUIRE_MESSAGE(lt_state_from_bytes(model.m, good.data(), good.size(), &back.s) == LT_OK,
                    std::string(lt_last_error()));
    CHECK(lt_state_position(back.s) == steps);
    CHECK(state_bytes(back.s) == good);
  }
  const uint64_t header = uint64_t(good[0]) | uint64_t(good[1]) << 8 | uint64_t(good[2]) << 16 | uint64_t(good[3]) << 24;
  REQUIRE(header + 8 < good.size());

  int refused = 0, in_header = 0, in_tensor = 0;
  const int trials = 3000;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<uint8_t> bad = good;
    std::string what;
    const int64_t kind = rng.integer(0, 3);
    if (kind == 0) {  // cut anywhere
      bad.resize(size_t(rng.integer(0, int64_t(good.size()) - 1)));
      what = "cut to " + std::to_string(bad.size()) + " bytes";
    } else {  // one byte changed; half of them in the tensor's data, where nothing else would notice
      const bool tensor = kind == 1;
      const size_t at = tensor ? size_t(rng.integer(int64_t(8 + header), int64_t(good.size()) - 1))
                               : size_t(rng.integer(0, int64_t(8 + header) - 1));
      const uint8_t flip = uint8_t(rng.integer(1, 255));
      bad[at] ^= flip;
      ++(at >= 8 + header ? in_tensor : in_header);
      what = "byte " + std::to_string(at) + " ^ " + std::to_string(flip);
      if (kind == 3) {  // and a second one
        const size_t other = size_t(rng.integer(0, int64_t(good.size()) - 1));
        bad[other] ^= uint8_t(rng.integer(1, 255));
        if (bad == good) continue;
        what += ", byte " + std::to_string(other);
      }
    }
    INFO(what);
    State loaded;
    const lt_status status = lt_state_from_bytes(model.m, bad.data(), bad.size(), &loaded.s);
    CHECK(status == LT_ERROR);
    CHECK(loaded.s == nullptr);
    const std::string line = lt_last_error();
    CHECK(line.rfind("state bytes: ", 0) == 0);
    CHECK(line.find('\n') == std::string::npos);
    refused += status == LT_ERROR;
  }
  CHECK(in_tensor > trials / 5);
  CHECK(in_header > trials / 5);
  MESSAGE(refused, " of ", trials, " damaged states refused");

  // A damaged file: the line names it.
  std::vector<uint8_t> bad = good;
  bad[size_t(rng.integer(int64_t(8 + header), int64_t(good.size()) - 1))] ^= uint8_t(rng.integer(1, 255));
  const std::string path = dir.file("damaged.safetensors");
  write_bytes(path, bad);
  State loaded;
  CHECK(lt_state_load(model.m, path.c_str(), &loaded.s) == LT_ERROR);
  CHECK(std::string(lt_last_error()).rfind(path + ": damaged: its checksum (lt.state.crc32 ", 0) == 0);
  // The file lt_state_save writes is lt_state_to_bytes's, and loads.
  const std::string saved = dir.file("saved.safetensors");
  REQUIRE(lt_state_save(state.s, saved.c_str()) == LT_OK);
  CHECK(read_bytes(saved) == good);
  REQUIRE_MESSAGE(lt_state_load(model.m, saved.c_str(), &loaded.s) == LT_OK, std::string(lt_last_error()));
}

TEST_CASE("lt.h: a state saved before states carried a checksum is refused with a line saying why") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Model model(tiny_image_checkpoint(dir, "m.safetensors", 5, 4, 1, AttentionKind::linear, seed));
  State state;
  REQUIRE(lt_state_new(model.m, 1, &state.s) == LT_OK);
  std::vector<float> head(size_t(head_width(model.m)));
  REQUIRE(lt_state_step(state.s, random_tokens(rng, 1).data(), head.data()) == LT_OK);
  const std::vector<uint8_t> good = state_bytes(state.s);
  // What lt_state_save wrote before: the same tensor and metadata, no lt.state.crc32.
  Checkpoint ck = parse_safetensors("state bytes", good.data(), good.size());
  REQUIRE(ck.metadata.erase("lt.state.crc32") == 1);
  const std::string old = safetensors_bytes(ck.tensors, ck.metadata);
  State loaded;
  CHECK(lt_state_from_bytes(model.m, reinterpret_cast<const uint8_t*>(old.data()), old.size(), &loaded.s) == LT_ERROR);
  CHECK(loaded.s == nullptr);
  CHECK(std::string(lt_last_error()) ==
        "state bytes: a state without a checksum (lt.state.crc32): damaged, or saved before lt's states carried one; "
        "refused, since it cannot be checked");
}
