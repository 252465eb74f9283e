// lt-sample-image: samples images from an image-model checkpoint with the
// recurrent form (an LSH model, which has none, by recomputing the prefix at
// every subpixel: O(L^2), slow), streams them to the terminal pixel by pixel
// (stderr) and writes PNGs. Per-image log-likelihoods go to stdout.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>

#include "process_setup.h"
#include "command_line.h"
#include "common_options.h"
#include "image_sheet.h"
#include "lt/precision_flags.h"
#include "lt/backend.h"
#include "lt/error.h"
#include "lt/heads.h"
#include "lt/image_generation.h"
#include "output_path.h"
#include "lt/progress.h"
#include "shipped_model.h"
#include "terminal_grid.h"

namespace {

struct Args {
  std::string model, output, out_dir, device = "cpu";
  int64_t count = 16, batch = 16, columns = 0;
  int scale = 1, threads = 0;
  uint64_t seed = 0;
  bool seed_given = false, quiet = false, tf32 = false, bf16 = false;
};

int run(const Args& a) {
  lt::set_num_threads(a.threads);
  const lt::Device device = lt::parse_device(a.device);
  lt::require_device(device);
  const lt::Precision precision = lt::generation_precision(a.bf16, a.tf32, device);
  const std::string model_path = a.model.empty() ? lt::app::find_shipped_model("mnist.safetensors") : a.model;
  if (!a.output.empty()) lt::app::check_output_file(a.output);
  if (!a.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    lt::check(!ec && std::filesystem::is_directory(a.out_dir), a.out_dir + ": cannot create the output folder");
  }
  auto model = lt::ImageModel::load(model_path, device);
  const lt::ImageModelConfig& c = model->config();
  const int64_t S = c.subpixels(), batch = std::min(a.batch, a.count);
  const uint64_t seed = a.seed_given ? a.seed : std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  const bool draw = !a.quiet && lt::stderr_is_terminal();
  if (!a.quiet)
    std::fprintf(stderr, "lt-sample-image: %s (%lldx%lldx%lld, %lld layers, %s), %lld images in batches of %lld, seed %llu, %s%s\n",
                 model_path.c_str(), (long long)c.height, (long long)c.width, (long long)c.channels,
                 (long long)c.transformer.layers, lt::attention_name(c.transformer.attention), (long long)a.count,
                 (long long)batch, (unsigned long long)seed, lt::device_description(device).c_str(),
                 precision == lt::Precision{} ? "" : (", " + precision.describe()).c_str());

  std::vector<uint8_t> all(a.count * S);
  lt::ImageGenerator generator(*model, batch, precision);
  lt::Progress progress(a.count * S, a.quiet || draw);
  std::vector<uint8_t> pixels;
  std::vector<double> nll;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t first = 0; first < a.count; first += batch) {
    const int64_t index = first / batch;
    std::unique_ptr<lt::app::TerminalGrid> grid;
    if (draw) grid = std::make_unique<lt::app::TerminalGrid>(batch, c.height, c.width, c.channels, lt::app::detect_color_mode());
    // Each batch draws from its own stream: the images depend on (seed, batch size) only.
    const uint64_t batch_seed = lt::splitmix64(seed + uint64_t(index));
    generator.generate(batch_seed, pixels, nullptr, [&](int64_t t, const std::vector<uint8_t>& px) {
      if (grid) grid->draw(px, t + 1);
      progress.update(first * S + (t + 1) * std::min(batch, a.count - first), "subpixels");
    }, &nll);
    if (grid) grid->finish(pixels);
    const int64_t keep = std::min(batch, a.count - first);
    std::copy(pixels.begin(), pixels.begin() + keep * S, all.begin() + first * S);
    for (int64_t i = 0; i < keep; ++i) {
      std::string file;
      if (!a.out_dir.empty()) {
        char name[32];
        std::snprintf(name, sizeof name, "sample_%04lld.png", (long long)(first + i));
        file = (std::filesystem::path(a.out_dir) / name).string();
        lt::write_png(file, lt::app::image_at(all, first + i, c.height, c.width, c.channels, a.scale));
      }
      const double nats = std::accumulate(nll.begin() + i * (S - 1), nll.begin() + (i + 1) * (S - 1), 0.0);
      std::printf("sample %lld: %.4f bits/dim%s%s\n", (long long)(first + i), nats / double(S - 1) / std::log(2.0),
                  file.empty() ? "" : " -> ", file.c_str());
      std::fflush(stdout);
    }
  }
  progress.finish();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.output.empty()) {
    const int64_t cols = a.columns > 0 ? a.columns : int64_t(std::ceil(std::sqrt(double(a.count))));
    lt::write_png(a.output, lt::app::make_sheet(all, a.count, c.height, c.width, c.channels, cols, 2, a.scale));
  }
  if (!a.quiet)
    std::fprintf(stderr, "lt-sample-image: %lld images in %.2f s, %.2f images/s, seed %llu%s%s\n", (long long)a.count,
                 secs, double(a.count) / secs, (unsigned long long)seed, a.output.empty() ? "" : ", grid in ",
                 a.output.c_str());
  return 0;
}

}  // namespace

LT_BEFORE_LIBRARIES(lt::app::setup_process<lt::app::UnderLoad::free_cores>);

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"lt-sample-image: sample images pixel by pixel from a linear-transformer image model"};
  lt::app::add_model_option(app, a.model, "mnist.safetensors");
  app.add_option("-n,--count", a.count, "images to sample")->capture_default_str()->check(lt::app::kPositive);
  app.add_option("-b,--batch", a.batch, "images sampled together")->capture_default_str()->check(lt::app::kPositive);
  auto* seed = lt::app::add_sampling_seed_option(app, a.seed);
  app.add_option("-o,--output", a.output, "write all images as one PNG grid");
  app.add_option("--out-dir", a.out_dir, "write one PNG per image (sample_0000.png, ...)");
  app.add_option("--columns", a.columns, "images per row of the grid (0: square)")->capture_default_str();
  app.add_option("--scale", a.scale, "PNG pixels per image pixel")->capture_default_str()->check(CLI::Range(1, 64));
  lt::app::add_device_option(app, a.device);
  lt::app::add_threads_option(app, a.threads);
  lt::app::add_precision_flags(app, a.bf16, a.tf32, lt::app::PrecisionUse::generation);
  app.add_flag("-q,--quiet", a.quiet, "no drawing, progress or summary on stderr");
  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-sample-image"); status >= 0) return status;
  a.seed_given = seed->count() > 0;
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lt-sample-image: %s\n", e.what());
    return 1;
  }
}
