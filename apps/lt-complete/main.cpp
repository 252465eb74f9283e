// lt-complete: completes occluded PNG images with an image-model checkpoint.
// The known part comes from the alpha channel (transparent = unknown) or from
// --keep-rows / --keep-pixels; the known prefix is consumed in one parallel
// pass and its recurrent state forked into -n completions (an LSH model,
// which has no recurrent form, recomputes the prefix at every subpixel). A
// short main over lt.h: lt_image_complete per input.
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
  std::vector<std::string> inputs;
  std::string model, output, out_dir, device = "cpu";
  int64_t completions = 1, keep_rows = -1, keep_pixels = -1;
  int scale = 1, threads = 0;
  uint64_t seed = 0;
  bool seed_given = false, quiet = false, tf32 = false, bf16 = false;
};

// What is known of an image to complete, per subpixel (raster order, RGB
// interleaved): values[i] is kept wherever known[i] is nonzero.
struct Known {
  std::vector<uint8_t> values, known;
};

// The known subpixels of one input. `original` is true when the whole image
// is known and flags mask it (so the sheet can show it).
Known read_input(const Args& a, const std::string& path, const lt_model_info& c, bool& original) {
  const lt::app::Image img = lt::app::read_png(path);
  const bool alpha = img.channels == 2 || img.channels == 4;
  const int64_t colour = alpha ? img.channels - 1 : img.channels;
  const auto expect = std::to_string(c.width) + "x" + std::to_string(c.height) + " " +
                      (c.channels == 1 ? "grey-scale" : "RGB");
  lt::app::check(img.width == c.width && img.height == c.height && colour == c.channels,
                 path + ": image is " + std::to_string(img.width) + "x" + std::to_string(img.height) + " " +
                     (colour == 1 ? "grey-scale" : "RGB") + ", the model expects " + expect +
                     " (optionally with alpha)");
  const int64_t P = int64_t(c.height) * c.width, S = P * c.channels;
  Known k;
  k.values.resize(S);
  k.known.resize(S);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t ch = 0; ch < c.channels; ++ch) k.values[p * c.channels + ch] = img.pixels[p * img.channels + ch];
  original = a.keep_rows >= 0 || a.keep_pixels >= 0;
  if (original) {
    const int64_t known_pixels = a.keep_rows >= 0 ? a.keep_rows * c.width : a.keep_pixels;
    lt::app::check(known_pixels <= P, path + ": --keep-rows/--keep-pixels keeps " + std::to_string(known_pixels) +
                                          " pixels of an image of " + std::to_string(P));
    for (int64_t i = 0; i < known_pixels * c.channels; ++i) k.known[i] = 1;
  } else {
    lt::app::check(alpha, path + ": no alpha channel to say what is unknown; pass --keep-rows K or --keep-pixels N");
    for (int64_t p = 0; p < P; ++p)
      for (int64_t ch = 0; ch < c.channels; ++ch)
        k.known[p * c.channels + ch] = img.pixels[p * img.channels + colour] >= 128;
  }
  return k;
}

// Unknown pixels painted in a muted red, in an RGB copy.
std::vector<uint8_t> occluded_rgb(const Known& k, int64_t channels) {
  const int64_t P = int64_t(k.values.size()) / channels;
  std::vector<uint8_t> rgb(P * 3);
  for (int64_t p = 0; p < P; ++p)
    for (int ch = 0; ch < 3; ++ch) {
      const int64_t i = p * channels + (channels == 3 ? ch : 0);
      rgb[p * 3 + ch] = k.known[i] ? k.values[i] : (ch == 0 ? 140 : 40);
    }
  return rgb;
}

std::vector<uint8_t> to_rgb(const uint8_t* px, int64_t pixels, int64_t channels) {
  std::vector<uint8_t> rgb(pixels * 3);
  for (int64_t p = 0; p < pixels; ++p)
    for (int ch = 0; ch < 3; ++ch) rgb[p * 3 + ch] = px[p * channels + (channels == 3 ? ch : 0)];
  return rgb;
}

int run(const Args& a) {
  lt_set_threads(a.threads);
  lt::app::check(!(a.keep_rows >= 0 && a.keep_pixels >= 0), "give --keep-rows or --keep-pixels, not both");
  lt::app::check(!a.output.empty() || !a.out_dir.empty(), "nothing to write: give -o OUT.png or --out-dir DIR");
  lt::app::check(a.output.empty() || (a.inputs.size() == 1 && a.completions == 1),
                 "-o writes one completion of one input; use --out-dir DIR for several inputs or -n > 1");
  if (!a.output.empty()) lt::app::check_output_file(a.output);
  const std::string model_path = a.model.empty() ? lt::app::find_shipped_model("mnist.safetensors") : a.model;
  const lt::api::Model model = lt::api::load_model(model_path, {a.device.c_str(), lt::app::precision_name(a.bf16, a.tf32)});
  const lt_model_info c = lt::api::model_info(model.get());
  lt::app::check(c.height > 0, model_path + ": " + lt::app::with_article(c.family) + " model, not an image model");
  const int64_t P = c.height * c.width, S = P * c.channels, K = a.completions;

  // Read and check every input before any work, so bad input leaves no output.
  std::vector<Known> inputs;
  std::vector<bool> originals;
  for (const std::string& in : a.inputs) {
    bool original = false;
    inputs.push_back(read_input(a, in, c, original));
    originals.push_back(original);
  }
  if (!a.out_dir.empty()) lt::app::create_output_folder(a.out_dir);
  const uint64_t seed = a.seed_given ? a.seed : std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  if (!a.quiet)
    std::fprintf(stderr, "lt-complete: %s (%lldx%lldx%lld, %s), %zu input(s) x %lld completion(s), seed %llu\n",
                 model_path.c_str(), (long long)c.height, (long long)c.width, (long long)c.channels, c.attention,
                 a.inputs.size(), (long long)K, (unsigned long long)seed);

  lt::app::ImageProgress progress(int64_t(a.inputs.size()) * S, a.quiet, c.height, c.width, c.channels);
  std::vector<uint8_t> pixels(K * S);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t n = 0; n < a.inputs.size(); ++n) {
    const Known& k = inputs[n];
    const lt_image_options o = progress.options(seed + n, K, int64_t(n) * S, 1, a.inputs[n], k.known);
    lt::api::ok(lt_image_complete(model.get(), k.values.data(), k.known.data(), K, &o, pixels.data()));
    progress.finish_call(pixels.data());

    const std::string stem = std::filesystem::path(a.inputs[n]).stem().string();
    if (!a.output.empty()) {
      lt::app::write_png(a.output, lt::app::image_at(pixels, 0, c.height, c.width, c.channels, a.scale));
      std::printf("%s -> %s\n", a.inputs[n].c_str(), a.output.c_str());
      continue;
    }
    // Sheet: occluded | completions | original (when flags masked a full image), in RGB.
    std::vector<uint8_t> row = occluded_rgb(k, c.channels);
    for (int64_t i = 0; i < K; ++i) {
      const std::string file = (std::filesystem::path(a.out_dir) / (stem + "_completion_" + std::to_string(i) + ".png")).string();
      lt::app::write_png(file, lt::app::image_at(pixels, i, c.height, c.width, c.channels, a.scale));
      std::printf("%s -> %s\n", a.inputs[n].c_str(), file.c_str());
      std::vector<uint8_t> rgb = to_rgb(pixels.data() + i * S, P, c.channels);
      row.insert(row.end(), rgb.begin(), rgb.end());
    }
    int64_t cells = K + 1;
    if (originals[n]) {
      std::vector<uint8_t> rgb = to_rgb(k.values.data(), P, c.channels);
      row.insert(row.end(), rgb.begin(), rgb.end());
      ++cells;
    }
    const std::string sheet = (std::filesystem::path(a.out_dir) / (stem + "_sheet.png")).string();
    lt::app::write_png(sheet, lt::app::make_sheet(row, cells, c.height, c.width, 3, cells, 2, a.scale));
    std::printf("%s -> %s\n", a.inputs[n].c_str(), sheet.c_str());
    std::fflush(stdout);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.quiet)
    std::fprintf(stderr, "lt-complete: %lld completions in %.2f s, seed %llu\n",
                 (long long)(int64_t(a.inputs.size()) * K), secs, (unsigned long long)seed);
  return 0;
}

}  // namespace

LT_BEFORE_LIBRARIES(lt::app::setup_process<lt::app::UnderLoad::free_cores>);

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"lt-complete: complete occluded PNG images pixel by pixel with a linear-transformer image model"};
  app.add_option("inputs", a.inputs, "PNG images (transparent pixels are unknown unless --keep-* is given)")
      ->required()
      ->check(CLI::ExistingFile);
  lt::app::add_model_option(app, a.model, "mnist.safetensors");
  app.add_option("-o,--output", a.output, "the completion of a single input (with -n 1)")->check(lt::app::kNonEmpty);
  app.add_option("--out-dir", a.out_dir, "write <name>_completion_<k>.png and <name>_sheet.png per input")->check(lt::app::kNonEmpty);
  app.add_option("-n,--completions", a.completions, "completions per input")->capture_default_str()->check(lt::app::kPositive);
  app.add_option("--keep-rows", a.keep_rows, "keep the top K rows of each input, complete the rest")->check(lt::app::kNonNegative);
  app.add_option("--keep-pixels", a.keep_pixels, "keep the first N pixels in raster order (the reference's offset)")->check(lt::app::kNonNegative);
  auto* seed = lt::app::add_sampling_seed_option(app, a.seed);
  app.add_option("--scale", a.scale, "PNG pixels per image pixel")->capture_default_str()->check(CLI::Range(1, 64));
  lt::app::add_device_option(app, a.device);
  lt::app::add_threads_option(app, a.threads);
  lt::app::add_precision_flags(app, a.bf16, a.tf32, lt::app::PrecisionUse::generation);
  app.add_flag("-q,--quiet", a.quiet, "no drawing, progress or summary on stderr");
  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-complete"); status >= 0) return status;
  a.seed_given = seed->count() > 0;
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lt-complete: %s\n", e.what());
    return 1;
  }
}
