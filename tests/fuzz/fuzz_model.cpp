// Model loading, as the tools call it, on arbitrary bytes: the first byte
// picks the family's loader (0: ImageModel::load, what lt-sample-image,
// lt-complete and lt-train --eval call; 1: load_copy_model; 2:
// load_speech_model), the rest is the checkpoint. Metadata parsing and every
// size derived from it are in play.
//
// Byte mutations rarely keep a safetensors header parseable and never write
// a newline into a JSON string, so half the mutations are structural
// (LLVMFuzzerCustomMutator): the header is parsed, a metadata value, a tensor
// name or every metadata value at once gets text with control bytes, or a
// number just past a 32- or 64-bit limit, and the header is written back in
// front of the same tensor bytes.
#include <nlohmann/json.hpp>
#include <random>

#include "fuzz_util.h"
#include "model/image_model.h"
#include "speech/speech_model.h"
#include "train/copy_task.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using json = nlohmann::json;

// Text a metadata value may hold that a message must not print raw.
std::string hostile_text(std::minstd_rand& rng, const std::string& old) {
  static const char* const kForms[] = {"a\nb", "\r\n", "\t", "\x1b[2J", "\x7f", "\x01", "4294983296",
                                       "-9223372036854775808", "18446744073709551616", "2147483648"};
  const std::string form = kForms[rng() % (sizeof kForms / sizeof *kForms)];
  std::string out = old;
  switch (rng() % 3) {
    case 0:
      return form;
    case 1:
      return out.insert(rng() % (out.size() + 1), form);
    default:
      return out.insert(rng() % (out.size() + 1), 1, char(rng() % 0x20));
  }
}

// The checkpoint in data[1..size) with one structural change, or 0 when its
// header does not parse (or the result would not fit max_size).
size_t mutate_header(uint8_t* data, size_t size, size_t max_size, std::minstd_rand& rng) {
  if (size < 9) return 0;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | data[1 + i];
  if (n > size - 9) return 0;
  json header = json::parse(data + 9, data + 9 + n, nullptr, false);
  if (!header.is_object()) return 0;
  json& meta = header["__metadata__"];
  if (!meta.is_object()) meta = json::object();
  std::vector<std::string> keys, tensors;
  for (auto it = meta.begin(); it != meta.end(); ++it) keys.push_back(it.key());
  for (auto it = header.begin(); it != header.end(); ++it)
    if (it.key() != "__metadata__") tensors.push_back(it.key());
  const unsigned what = rng() % 4;
  if (what == 0 && !tensors.empty()) {  // a tensor's name
    const std::string& old = tensors[rng() % tensors.size()];
    json t = header[old];
    header.erase(old);
    header[hostile_text(rng, old)] = t;
  } else if (what == 1) {  // every value
    for (const std::string& k : keys) meta[k] = hostile_text(rng, meta[k].is_string() ? meta[k].get<std::string>() : "");
  } else if (!keys.empty()) {  // one value
    const std::string& k = keys[rng() % keys.size()];
    meta[k] = hostile_text(rng, meta[k].is_string() ? meta[k].get<std::string>() : "");
  } else {
    return 0;
  }
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.resize((text.size() + 7) / 8 * 8, ' ');
  const size_t rest = size - 9 - size_t(n), total = 9 + text.size() + rest;
  if (total > max_size) return 0;
  std::vector<uint8_t> out(total);
  out[0] = data[0];
  for (int i = 0; i < 8; ++i) out[1 + i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  std::copy(text.begin(), text.end(), out.begin() + 9);
  std::copy(data + 9 + n, data + size, out.begin() + 9 + long(text.size()));
  std::copy(out.begin(), out.end(), data);
  return total;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 2)
    if (const size_t n = mutate_header(data, size, max_size, rng)) return n;
  return LLVMFuzzerMutate(data, size, max_size);
}

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
