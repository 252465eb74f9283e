// lt-train's image task: train, evaluate (--eval) and export (--export) the
// pixel-by-pixel image model on an image dataset folder.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "blas_cores.h"
#include "lt/backend.h"
#include "lt/error.h"
#include "lt/image_training.h"
#include "lt/safetensors.h"
#include "metrics_log.h"
#include "precision_options.h"
#include "progress.h"
#include "train_run.h"
#include "train_tasks.h"

namespace lt::app {

Schedule TrainArgs::make_schedule(float base_lr, int64_t total_steps) const {
  Schedule s;
  s.kind = parse_schedule_kind(schedule);
  s.lr = lr > 0 ? lr : base_lr;
  s.warmup_steps = warmup;
  s.milestones = milestones;
  s.gamma = gamma;
  s.total_steps = total_steps;
  s.min_lr = min_lr;
  return s;
}

static std::string folder_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  size_t slash = d.find_last_of('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

static ImageDataset load_data(const std::string& dir) {
  check(!dir.empty(), "--data DIR is required (a folder with MNIST IDX, CIFAR-10 binary or PNG files)");
  return load_image_dataset(dir);
}

// The preset for the data's image size, then the flags that override it.
static ImageModelConfig image_config(const TrainArgs& a, const ImageSet& train) {
  std::string preset = a.preset;
  if (preset.empty()) preset = train.channels == 3 ? "cifar10" : "mnist";
  ImageModelConfig c = ImageModelConfig::preset(preset);
  c.height = train.height;
  c.width = train.width;
  c.channels = train.channels;
  TransformerConfig& t = c.transformer;
  if (a.layers > 0) t.layers = a.layers;
  if (a.heads > 0) t.heads = a.heads;
  if (a.d_model > 0) {
    t.d_model = a.d_model;
    t.ff_dim = 4 * a.d_model;
  }
  check(t.d_model % t.heads == 0, "--d-model " + std::to_string(t.d_model) + " is not a multiple of --heads " +
                                      std::to_string(t.heads));
  t.head_dim = t.d_model / t.heads;
  if (a.ff_dim > 0) t.ff_dim = a.ff_dim;
  if (a.mixtures > 0) c.mixtures = a.mixtures;
  t.set_attention(a.attention);
  t.feature_map = a.feature_map;
  t.ff_conv = a.ff_conv;
  t.features = a.features;
  if (a.dropout >= 0) t.dropout = a.dropout;
  check(a.output_head == "mol" || a.output_head == "categorical",
        "--output-head must be mol or categorical, got '" + a.output_head + "'");
  c.head = a.output_head == "categorical" ? HeadKind::categorical : HeadKind::mixture_of_logistics;
  c.validate();
  return c;
}

namespace {
// The image task for lt-train's run: its data, flags and result line.
class ImageRun final : public TaskRun {
 public:
  explicit ImageRun(const TrainArgs& a) : data_(load_data(a.data)) {}
  SequenceModel& resume(const std::string& path, const TrainArgs& a, Device d) override {
    model_ = ImageModel::load(path, d);
    const ImageModelConfig want = image_config(a, data_.train), &have = model_->config();
    std::vector<ArchitectureField> fields = transformer_fields(want.transformer, have.transformer);
    fields.push_back({"--mixtures", std::to_string(want.mixtures), std::to_string(have.mixtures)});
    fields.push_back({"--output-head", want.output_head().name(), have.output_head().name()});
    check_resumed_architecture(a, fields, path);
    return checked();
  }
  SequenceModel& start(const TrainArgs& a, Device d) override {
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
    model_->init_parameters(a.seed);
    return checked();
  }
  int64_t default_batch() const override { return cifar_like() ? 10 : 16; }
  int64_t steps_per_epoch(int64_t batch) const override { return (data_.train.count + batch - 1) / batch; }
  Schedule schedule(const TrainArgs& a, int64_t steps) const override {
    return a.make_schedule(cifar_like() ? 2e-4f : 1e-4f, steps);
  }
  std::map<std::string, std::string> metadata(const TrainArgs& a) const override {
    std::map<std::string, std::string> m = model_->metadata();  // the geometry and histogram the core does not know
    m["dataset"] = folder_name(a.data);
    if (!a.init.empty()) m["lt.train.init"] = a.init;
    return m;
  }
  TrainingTask& task(const TrainArgs& a, int64_t batch) override {
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
  nlohmann::json finish(const TrainArgs& a, int64_t step, int64_t batch, const Precision& eval) override {
    // The test bits/dim of every run in fp32 products, bf16 training or not.
    const ImageEvaluation ev = evaluate_images(*model_, data_.test, batch, a.eval_images, eval);
    std::printf("%s: step %lld, test %.4f bits/dim on %lld images\n", a.output.c_str(), (long long)step,
                ev.bits_per_dim, (long long)ev.images);
    return {{"event", "eval"}, {"step", step}, {"test_bits_per_dim", ev.bits_per_dim}};
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

int run_image_training(const TrainArgs& a, const std::atomic<bool>& stop) {
  ImageRun run(a);
  return run_training(a, run, stop);
}

static std::string checkpoint_kind(const std::string& path) {
  Checkpoint ck = load_safetensors(path);
  return ck.meta("lt.model", "image");
}

int run_copy_eval(const TrainArgs& a);
int run_copy_export(const TrainArgs& a, const Checkpoint& ck);
int run_asr_eval(const TrainArgs& a);
int run_asr_export(const TrainArgs& a, const Checkpoint& ck);

int run_eval(const TrainArgs& a) {
  check(!a.model.empty(), "--eval needs -m CHECKPOINT");
  const std::string kind = checkpoint_kind(a.model);
  if (kind == "copy") {
    refuse_options(a, kImageOnlyOptions, a.model + ", a copy-task model");
    refuse_options(a, kSpeechOnlyOptions, a.model + ", a copy-task model");
    return run_copy_eval(a);
  }
  if (kind == "speech") {
    refuse_options(a, kImageNotSpeechOptions, a.model + ", a speech model");
    return run_asr_eval(a);
  }
  refuse_options(a, kSpeechOnlyOptions, a.model + ", an image model");
  const Device device = parse_device(a.device);
  require_device(device);
  auto model = ImageModel::load(a.model, device);
  ImageDataset data = load_data(a.data);
  const auto t0 = std::chrono::steady_clock::now();
  ImageEvaluation ev =
      a.recurrent ? evaluate_images_recurrent(*model, data.test, a.batch > 0 ? a.batch : 64, a.eval_images,
                                              generation_precision(a.bf16, a.tf32, device))
                  : evaluate_images(*model, data.test, a.batch > 0 ? a.batch : 16, a.eval_images,
                                    training_precision(a.bf16, a.tf32, device));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const char* form = a.recurrent ? "recurrent" : "parallel";
  if (a.format == "json") {
    nlohmann::json j = {{"bits_per_dim", ev.bits_per_dim}, {"nats_per_dim", ev.nats_per_dim},
                        {"images", ev.images}, {"model", a.model}, {"data", a.data},
                        {"attention", attention_name(model->config().transformer)},
                        {"form", form}, {"precision", a.bf16 ? "bf16" : "fp32"},
                        {"device", a.device}, {"seconds", secs}};
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%.4f bits/dim (%.4f nats/dim) on %lld test images of %s (%s%s, %.1f s)\n", ev.bits_per_dim,
                ev.nats_per_dim, (long long)ev.images, a.data.c_str(), form, a.bf16 ? " bf16" : "", secs);
  }
  return 0;
}

int run_export(const TrainArgs& a) {
  check(!a.model.empty(), "--export needs -m CHECKPOINT");
  check(a.output != a.model, "--export: -o must differ from -m");
  Checkpoint ck = load_safetensors(a.model);
  if (ck.meta("lt.model", "image") == "speech") return run_asr_export(a, ck);
  check(a.score.empty(), "--score: " + a.model + " is not a speech model (an image or copy model's --export scores --data)");
  if (ck.meta("lt.model", "image") == "copy") return run_copy_export(a, ck);
  auto model = ImageModel::load(a.model, parse_device(a.device));
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : ck.metadata)
    if (!model->metadata().count(k)) meta[k] = v;
  average_models(a, ck, model->params(), model->metadata(), meta);
  if (!a.data.empty()) {
    ImageDataset data = load_data(a.data);
    ImageEvaluation ev = evaluate_images(*model, data.test, a.batch > 0 ? a.batch : 16, a.eval_images);
    meta["test_bits_per_dim"] = std::to_string(ev.bits_per_dim);
    meta["test_images"] = std::to_string(ev.images);
    std::printf("%s: %.4f bits/dim on %lld test images\n", a.output.c_str(), ev.bits_per_dim, (long long)ev.images);
  }
  add_notes(a, meta);
  model->save(a.output, meta);
  return 0;
}

}  // namespace lt::app
