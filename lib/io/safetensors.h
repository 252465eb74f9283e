// Checkpoints in the safetensors format (docs/checkpoint-format.md): a PyTorch
// state_dict saved with safetensors.torch.save_file loads as is.
//
//   lt::Checkpoint ck = lt::load_safetensors("model.safetensors");
//   int64_t heads = ck.meta_int("heads");
//   const lt::Tensor& W = ck.get("transformer.layers.0.linear1.weight", {ff, d_model});
//   lt::save_safetensors("out.safetensors", {{"w", W}}, {{"model", "lm"}});
//
// Every problem with a file is an lt::Error whose one-line message starts
// with the file's path and names what is wrong.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "core/tensor.h"

namespace lt {

struct Checkpoint {
  std::string path;                               // the file it was read from, for messages
  std::map<std::string, std::string> metadata;    // "__metadata__": every value a string
  std::map<std::string, Tensor> tensors;          // float32 CPU tensors by name

  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  // Throws "<path>: missing tensor '<name>'" or
  // "<path>: tensor '<name>' has shape [..], the config needs [..]".
  const Tensor& get(const std::string& name, const Shape& expected) const;
  // Throws "<path>: missing metadata '<key>'".
  std::string meta(const std::string& key) const;
  std::string meta(const std::string& key, const std::string& fallback) const;
  // meta(key) parsed as a whole decimal integer; throws naming the key and value otherwise.
  int64_t meta_int(const std::string& key) const;
  // meta(key) parsed as a whole finite decimal number; throws naming the key and value otherwise.
  double meta_double(const std::string& key) const;
};

// Reads F32, F16 and BF16 tensors, all converted exactly to float32 on the CPU.
// A 0-d (scalar) tensor becomes shape [1], since lt tensors have at least one axis.
Checkpoint load_safetensors(const std::string& path);
// The same from bytes in memory (a state sent over a socket, say); errors
// name `name`. The tensors are copies: data may go once this returns.
Checkpoint parse_safetensors(const std::string& name, const void* data, size_t size);

// Writes F32 tensors (copied from the GPU where they live there), sorted by
// name, with the header padded by spaces to a multiple of 8 bytes. The file is
// written to "<path>.tmp" and renamed over path, so a crash never leaves half a file.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// What save_safetensors writes, as bytes in memory.
std::string safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace lt
