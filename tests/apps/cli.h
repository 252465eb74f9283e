// Running the built command-line tools from tests: exit code, stdout and
// stderr of one invocation, and a tiny image model checkpoint and dataset to
// feed them.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/image_dataset.h"
#include "io/temp_dir.h"
#include "model/image_model.h"

namespace lt::test {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs the program at path with args (a shell fragment, quote paths
// yourself) and env (e.g. "NO_COLOR=1 "), capturing both streams through
// files in dir.
inline CommandResult run_program(const TempDir& dir, const std::string& path, const std::string& args,
                                 const std::string& env = "") {
  const std::string out = dir.file(".cmd.out"), err = dir.file(".cmd.err");
  const std::string cmd = env + "'" + path + "' " + args + " >'" + out + "' 2>'" + err + "' </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out);
  r.err = read_text(err);
  INFO("command: ", cmd);
  return r;
}

// Runs LT_BIN_DIR/<tool>, as run_program.
inline CommandResult run_tool(const TempDir& dir, const std::string& tool, const std::string& args,
                              const std::string& env = "") {
  return run_program(dir, std::string(LT_BIN_DIR) + "/" + tool, args, env);
}

// A checkpoint's tensors by name with their float values; metadata apart.
inline std::map<std::string, std::vector<float>> tensor_values(const std::string& path) {
  std::map<std::string, std::vector<float>> m;
  for (const auto& [name, t] : load_safetensors(path).tensors) m[name] = t.to_vector();
  return m;
}

// A randomly initialised image model small enough for tests to run in
// milliseconds: height x width x channels, 2 layers, d 16, 2 heads.
inline std::string tiny_image_checkpoint(const TempDir& dir, const std::string& name, int64_t height = 6,
                                         int64_t width = 5, int64_t channels = 1,
                                         AttentionKind attention = AttentionKind::linear,
                                         uint64_t seed = 7) {
  ImageModelConfig c;
  c.height = height;
  c.width = width;
  c.channels = channels;
  c.mixtures = 3;
  c.transformer = TransformerConfig{2, 2, 8, 16, 32, attention, Direction::causal, "elu", 0.1f};
  ImageModel model(c, Device::cpu);
  model.core().init_parameters(seed);
  const std::string path = dir.file(name);
  model.core().save(path);
  return path;
}

// dir/data: 5x4 grey images, 24 to train on and 6 to test, as MNIST's IDX files.
inline std::string tiny_idx_dataset(const TempDir& dir, uint64_t seed, int64_t height = 5, int64_t width = 4) {
  Rng rng(seed);
  const std::string data = dir.file("data/.keep");
  for (const char* split : {"train", "t10k"}) {
    ImageSet s;
    s.count = std::string(split) == "train" ? 24 : 6;
    s.height = height, s.width = width, s.channels = 1;
    s.pixels = random_bytes(rng, s.count * s.image_bytes());
    write_idx_images(dir.file(std::string("data/") + split + "-images-idx3-ubyte"), s);
  }
  std::filesystem::remove(data);
  return dir.file("data");
}

}  // namespace lt::test
