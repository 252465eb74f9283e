// lt-sample-image: samples images from an image-model checkpoint with the
// recurrent form (an LSH model, which has none, by recomputing the prefix at
// every subpixel: O(L^2), slow), streams them to the terminal pixel by pixel
// (stderr) and writes PNGs. Per-image log-likelihoods go to stdout. A short
// main over lt.h: lt_image_sample per batch.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "command_line.h"
#include "common_options.h"
#include "image_progress.h"
#include "image_sheet.h"
#include "lt.hpp"
#include "output_path.h"
#include "process_setup.h"
#include "shipped_model.h"
#include "tool_error.h"

namespace {

struct Args {
  std::string model, output, out_dir, device = "cpu";
  int64_t count = 16, batch = 16, columns = 0;
  int scale = 1, threads = 0;
  uint64_t seed = 0;
  bool seed_given = false, quiet = false, tf32 = false, bf16 = false;
};

int run(const Args& a) {
  lt_set_threads(a.threads);
  const std::string model_path = a.model.empty() ? lt::app::find_shipped_model("mnist.safetensors") : a.model;
  if (!a.output.empty()) lt::app::check_output_file(a.output);
  if (!a.out_dir.empty()) lt::app::create_output_folder(a.out_dir);
  const lt::api::Model model = lt::api::load_model(model_path, {a.device.c_str(), lt::app::precision_name(a.bf16, a.tf32)});
  const lt_model_info info = lt::api::model_info(model.get());
  lt::app::check(info.height > 0, model_path + ": " + lt::app::with_article(info.family) + " model, not an image model");
  const int64_t S = info.height * info.width * info.channels, batch = std::min(a.batch, a.count);
  const uint64_t seed = a.seed_given ? a.seed : std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  const std::string precision = a.bf16 || a.tf32 ? std::string(", ") + info.precision : "";
  if (!a.quiet)
    std::fprintf(stderr, "lt-sample-image: %s (%lldx%lldx%lld, %lld layers, %s), %lld images in batches of %lld, seed %llu, %s%s\n",
                 model_path.c_str(), (long long)info.height, (long long)info.width, (long long)info.channels,
                 (long long)info.layers, info.attention, (long long)a.count, (long long)batch,
                 (unsigned long long)seed, info.device, precision.c_str());

  std::vector<uint8_t> all(a.count * S);
  std::vector<double> bits(a.count);
  lt::app::ImageProgress progress(a.count * S, a.quiet, info.height, info.width, info.channels);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t first = 0; first < a.count; first += batch) {
    // Batch j draws from seed + j: the images depend on (seed, batch size) only.
    const int64_t rows = std::min(batch, a.count - first);
    lt_image_options o = progress.options(seed + uint64_t(first / batch), rows, first * S, rows, "subpixels");
    o.batch = batch;
    lt::api::ok(lt_image_sample(model.get(), rows, &o, all.data() + first * S, bits.data() + first));
    progress.finish_call(all.data() + first * S);
    for (int64_t i = first; i < first + rows; ++i) {
      std::string file;
      if (!a.out_dir.empty()) {
        char name[32];
        std::snprintf(name, sizeof name, "sample_%04lld.png", (long long)i);
        file = (std::filesystem::path(a.out_dir) / name).string();
        lt::app::write_png(file, lt::app::image_at(all, i, info.height, info.width, info.channels, a.scale));
      }
      std::printf("sample %lld: %.4f bits/dim%s%s\n", (long long)i, bits[i], file.empty() ? "" : " -> ", file.c_str());
      std::fflush(stdout);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.output.empty()) {
    const int64_t cols = a.columns > 0 ? a.columns : int64_t(std::ceil(std::sqrt(double(a.count))));
    lt::app::write_png(a.output, lt::app::make_sheet(all, a.count, info.height, info.width, info.channels, cols, 2, a.scale));
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
  app.add_option("-o,--output", a.output, "write all images as one PNG grid")->check(lt::app::kNonEmpty);
  app.add_option("--out-dir", a.out_dir, "write one PNG per image (sample_0000.png, ...)")->check(lt::app::kNonEmpty);
  app.add_option("--columns", a.columns, "images per row of the grid (0: square)")->capture_default_str()->check(lt::app::kNonNegative);
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
