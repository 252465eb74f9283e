// The image task as a task family: the pixel-by-pixel image model on an
// image dataset folder, its preset from the image size, scored in bits/dim.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "core/precision_flags.h"
#include "task_family.h"
#include "train/image_training.h"

namespace lt {

namespace {
std::string folder_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  size_t slash = d.find_last_of('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

ImageDataset load_data(const std::string& dir) {
  check(!dir.empty(), "--data DIR is required (a folder with MNIST IDX, CIFAR-10 binary or PNG files)");
  return load_image_dataset(dir);
}

// The preset for the data's image size, then the options that override it.
ImageModelConfig image_config(const TrainingRecipe& a, const ImageSet& train) {
  std::string preset = a.preset;
  if (preset.empty()) preset = train.channels == 3 ? "cifar10" : "mnist";
  ImageModelConfig c = ImageModelConfig::preset(preset);
  c.height = train.height;
  c.width = train.width;
  c.channels = train.channels;
  apply_transformer_options(a, c.transformer);
  if (a.mixtures > 0) c.mixtures = a.mixtures;
  check(a.output_head == "mol" || a.output_head == "categorical",
        "--output-head must be mol or categorical, got '" + a.output_head + "'");
  c.head = a.output_head == "categorical" ? HeadKind::categorical : HeadKind::mixture_of_logistics;
  c.validate();
  return c;
}

class ImageFamily final : public TaskFamily {
 public:
  ImageFamily() = default;
  explicit ImageFamily(ImageDataset data) : data_(std::move(data)) {}
  SequenceModel& resume(const std::string& path, const TrainingRecipe& a, Device d) override {
    model_ = ImageModel::load(path, d);
    const ImageModelConfig want = image_config(a, data_.train), &have = model_->config();
    std::vector<ArchitectureField> fields = transformer_fields(want.transformer, have.transformer);
    fields.push_back({"--mixtures", std::to_string(want.mixtures), std::to_string(have.mixtures)});
    fields.push_back({"--output-head", want.output_head().name(), have.output_head().name()});
    check_resumed_architecture(a, fields, path);
    return checked();
  }
  SequenceModel& start(const TrainingRecipe& a, Device d) override {
    if (!a.init.empty()) {
      refuse_architecture_with_init(a);
      model_ = ImageModel::load(a.init, d);  // its architecture and histogram; a fresh optimizer
      return checked();
    }
    ImageModelConfig config = image_config(a, data_.train);
    config.first_subpixel_histogram.assign(256, 0.0);
    for (int64_t i = 0; i < data_.train.count; ++i)
      config.first_subpixel_histogram[data_.train.pixels[i * data_.train.image_bytes()]] += 1;
    model_ = std::make_unique<ImageModel>(config, d);
    model_->core().init_parameters(a.seed);
    return checked();
  }
  int64_t default_batch() const override { return cifar_like() ? 10 : 16; }
  int64_t steps_per_epoch(int64_t batch) const override { return (data_.train.count + batch - 1) / batch; }
  Schedule schedule(const TrainingRecipe& a, int64_t steps) const override {
    return a.make_schedule(cifar_like() ? 2e-4f : 1e-4f, steps);
  }
  std::map<std::string, std::string> metadata(const TrainingRecipe& a) const override {
    std::map<std::string, std::string> m = model_->core().metadata();  // the geometry and histogram among them
    m["dataset"] = folder_name(a.data);
    if (!a.init.empty()) m["lt.train.init"] = a.init;
    return m;
  }
  TrainingTask& task(const TrainingRecipe& a, int64_t batch) override {
    task_ = std::make_unique<ImageTrainingTask>(*model_, data_, a.seed, a.eval_images, batch);
    return *task_;
  }
  std::string description() const override {
    const ImageModelConfig& c = model_->config();
    return data_.format + " " + std::to_string(c.height) + "x" + std::to_string(c.width) + "x" +
           std::to_string(c.channels) + ", " + std::to_string(data_.train.count) + " train / " +
           std::to_string(data_.test.count) + " test images";
  }
  bool reports_bits() const override { return true; }
  FinalScore finish(const TrainingRecipe& a, int64_t step, int64_t batch, const Precision& eval) override {
    // The test bits/dim of every run in fp32 products, bf16 training or not.
    const ImageEvaluation ev = evaluate_images(*model_, data_.test, batch, a.eval_images, eval);
    char line[256];
    std::snprintf(line, sizeof line, "step %lld, test %.4f bits/dim on %lld images", (long long)step, ev.bits_per_dim,
                  (long long)ev.images);
    return {a.output + ": " + line, {{"event", "eval"}, {"step", step}, {"test_bits_per_dim", ev.bits_per_dim}}};
  }

  SequenceModel& load(const std::string& path, Device d) override {
    model_ = ImageModel::load(path, d);
    return model_->core();
  }
  std::map<std::string, std::string> model_metadata() const override { return model_->core().metadata(); }
  std::string save(const std::string& path, const std::map<std::string, std::string>& meta) override {
    model_->core().save(path, meta);
    return "";
  }
  std::string evaluate(const TrainingRecipe& a, Device d) override {
    data_ = load_data(a.data);
    const auto t0 = std::chrono::steady_clock::now();
    const ImageEvaluation ev =
        a.recurrent ? evaluate_images_recurrent(*model_, data_.test, a.batch > 0 ? a.batch : 64, a.eval_images,
                                                generation_precision(a.bf16, a.tf32, d))
                    : evaluate_images(*model_, data_.test, a.batch > 0 ? a.batch : 16, a.eval_images,
                                      training_precision(a.bf16, a.tf32, d));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const char* form = a.recurrent ? "recurrent" : "parallel";
    if (a.format == "json") {
      nlohmann::json j = {{"bits_per_dim", ev.bits_per_dim}, {"nats_per_dim", ev.nats_per_dim},
                          {"images", ev.images}, {"model", a.model}, {"data", a.data},
                          {"attention", attention_name(model_->config().transformer)},
                          {"form", form}, {"precision", a.bf16 ? "bf16" : "fp32"},
                          {"device", a.device}, {"seconds", secs}};
      return j.dump() + "\n";
    }
    char line[160];
    std::snprintf(line, sizeof line, "%.4f bits/dim (%.4f nats/dim) on %lld test images of ", ev.bits_per_dim,
                  ev.nats_per_dim, (long long)ev.images);
    char tail[64];
    std::snprintf(tail, sizeof tail, " (%s%s, %.1f s)\n", form, a.bf16 ? " bf16" : "", secs);
    return line + a.data + tail;
  }
  // Without --data, the export has no scores.
  void score(const TrainingRecipe& a, std::map<std::string, std::string>& meta, std::string& report) override {
    if (a.data.empty()) return;
    data_ = load_data(a.data);
    const ImageEvaluation ev = evaluate_images(*model_, data_.test, a.batch > 0 ? a.batch : 16, a.eval_images);
    meta["test_bits_per_dim"] = std::to_string(ev.bits_per_dim);
    meta["test_images"] = std::to_string(ev.images);
    char line[128];
    std::snprintf(line, sizeof line, ": %.4f bits/dim on %lld test images\n", ev.bits_per_dim, (long long)ev.images);
    report += a.output + line;
  }

 private:
  bool cifar_like() const { return model_->config().channels == 3; }
  SequenceModel& checked() {
    check_image_size(*model_, data_.train);  // a resumed model meets its data before anything is printed
    return model_->core();
  }
  ImageDataset data_;
  std::unique_ptr<ImageModel> model_;
  std::unique_ptr<ImageTrainingTask> task_;
};
}  // namespace


std::unique_ptr<TaskFamily> image_family() { return std::make_unique<ImageFamily>(); }
std::unique_ptr<TaskFamily> image_family(const std::string& data) {
  return std::make_unique<ImageFamily>(load_data(data));
}

}  // namespace lt
