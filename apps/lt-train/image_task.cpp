// lt-train's image task: train, evaluate (--eval) and export (--export) the
// pixel-by-pixel image model on an image dataset folder.
#include <sys/stat.h>

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
#include "train_report.h"
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

static bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
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
  t.attention = parse_attention(a.attention);
  t.feature_map = a.feature_map;
  if (a.dropout >= 0) t.dropout = a.dropout;
  check(a.output_head == "mol" || a.output_head == "categorical",
        "--output-head must be mol or categorical, got '" + a.output_head + "'");
  c.head = a.output_head == "categorical" ? HeadKind::categorical : HeadKind::mixture_of_logistics;
  c.validate();
  return c;
}

int run_image_training(const TrainArgs& args, const std::atomic<bool>& stop) {
  TrainArgs a = args;
  const Device device = parse_device(a.device);
  require_device(device);
  ImageDataset data = load_data(a.data);
  const bool resuming = a.resume && file_exists(a.output);
  check(a.resume || !file_exists(a.output),
        a.output + ": already exists; pass --resume to continue training it, or choose another --output");

  std::unique_ptr<ImageModel> model;
  if (resuming) {
    a.adopt_recipe(load_safetensors(a.output));
    model = ImageModel::load(a.output, device);
    const ImageModelConfig want = image_config(a, data.train), &have = model->config();
    std::vector<ArchitectureField> fields = transformer_fields(want.transformer, have.transformer);
    fields.push_back({"--mixtures", std::to_string(want.mixtures), std::to_string(have.mixtures)});
    fields.push_back({"--output-head", want.output_head().name(), have.output_head().name()});
    check_resumed_architecture(a, fields, a.output);
  } else if (!a.init.empty()) {
    for (const char* flag : kArchitectureOptions)
      check(!a.given.count(flag), std::string(flag) + " cannot be combined with --init: the architecture comes from " + a.init);
    model = ImageModel::load(a.init, device);  // its architecture and histogram; a fresh optimizer
  } else {
    ImageModelConfig config = image_config(a, data.train);
    config.first_subpixel_histogram.assign(256, 0.0);
    for (int64_t i = 0; i < data.train.count; ++i) config.first_subpixel_histogram[data.train.pixels[i * data.train.image_bytes()]] += 1;
    model = std::make_unique<ImageModel>(config, device);
    model->init_parameters(a.seed);
  }
  if (a.dropout >= 0) model->set_dropout(a.dropout);  // a training option, whatever the checkpoint had
  const ImageModelConfig& c = model->config();
  check_image_size(*model, data.train);  // a resumed model meets its data before anything is printed
  const bool cifar_like = c.channels == 3;
  const int64_t batch = a.batch > 0 ? a.batch : (cifar_like ? 10 : 16);
  const int64_t per_epoch = (data.train.count + batch - 1) / batch;
  const int64_t steps = a.steps > 0 ? a.steps : a.epochs * per_epoch;
  check(steps > 0, "nothing to train: give --steps or --epochs");

  TrainOptions opt;
  opt.optimizer = a.optimizer;
  opt.schedule = a.make_schedule(cifar_like ? 2e-4f : 1e-4f, steps);
  opt.clip = a.clip;
  opt.seed = a.seed;
  Trainer trainer(model->params(), opt);
  if (resuming) trainer.restore(load_safetensors(a.output));

  TrainLoopSettings s;
  s.batch = batch;
  s.steps = steps;
  s.checkpoint_every = a.checkpoint_every;
  s.checkpoint = a.output;
  s.eval_every = a.eval_every;
  s.precision = training_precision(a.bf16, a.tf32, device);
  s.metadata = model->metadata();  // the image geometry and histogram, which the core does not know
  for (const auto& [k, v] : recipe_metadata(a, opt.schedule, batch, steps)) s.metadata[k] = v;
  s.metadata["dataset"] = folder_name(a.data);
  if (!a.init.empty()) s.metadata["lt.train.init"] = a.init;

  const TransformerConfig& t = c.transformer;
  if (!a.quiet)
    std::fprintf(stderr,
                 "lt-train: %s %lldx%lldx%lld, %lld train / %lld test images; %lld layers, d %lld, %lld heads, %s, "
                 "%lld params; batch %lld, %s lr %g; %s step %lld of %lld, seed %llu, %s, %d threads%s\n",
                 data.format.c_str(), (long long)c.height, (long long)c.width, (long long)c.channels,
                 (long long)data.train.count, (long long)data.test.count, (long long)t.layers, (long long)t.d_model,
                 (long long)t.heads, attention_name(t.attention), (long long)model->params().numel(),
                 (long long)batch, a.optimizer.c_str(), opt.schedule.lr, resuming ? "resuming at" : "from",
                 (long long)trainer.step(), (long long)steps, (unsigned long long)a.seed,
                 device_description(device).c_str(), num_threads(),
                 device == Device::cpu ? (", " + app::blas_description() + (a.bf16 ? ", bf16 products" : "")).c_str() : "");

  MetricsLog log(a.log);
  Progress progress(steps, a.quiet, 10.0, trainer.step());
  ImageTrainingTask task(*model, data, a.seed, a.eval_images, batch);
  const TrainResult r = train_model(model->core(), trainer, task, s, report_events(log, progress, true, a.quiet), &stop);
  progress.finish();
  if (r.status != TrainStatus::finished) return report_unfinished(r, a.output);
  // The test bits/dim of every run in fp32 products, bf16 training or not.
  ImageEvaluation ev = evaluate_images(*model, data.test, batch, a.eval_images, s.eval_precision);
  log.write({{"event", "eval"}, {"step", r.step}, {"test_bits_per_dim", ev.bits_per_dim}});
  std::printf("%s: step %lld, test %.4f bits/dim on %lld images\n", a.output.c_str(), (long long)r.step,
              ev.bits_per_dim, (long long)ev.images);
  return 0;
}

static std::string checkpoint_kind(const std::string& path) {
  Checkpoint ck = load_safetensors(path);
  return ck.meta("lt.model", "image");
}

int run_copy_eval(const TrainArgs& a);
int run_copy_export(const TrainArgs& a, const Checkpoint& ck);

int run_eval(const TrainArgs& a) {
  check(!a.model.empty(), "--eval needs -m CHECKPOINT");
  if (checkpoint_kind(a.model) == "copy") {
    refuse_options(a, kImageOnlyOptions, a.model + ", a copy-task model");
    return run_copy_eval(a);
  }
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
                        {"attention", attention_name(model->config().transformer.attention)},
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
  if (ck.meta("lt.model", "image") == "copy") return run_copy_export(a, ck);
  auto model = ImageModel::load(a.model, parse_device(a.device));
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : ck.metadata)
    if (!model->metadata().count(k)) meta[k] = v;
  if (!a.data.empty()) {
    ImageDataset data = load_data(a.data);
    ImageEvaluation ev = evaluate_images(*model, data.test, a.batch > 0 ? a.batch : 16, a.eval_images);
    meta["test_bits_per_dim"] = std::to_string(ev.bits_per_dim);
    meta["test_images"] = std::to_string(ev.images);
    std::printf("%s: %.4f bits/dim on %lld test images\n", a.output.c_str(), ev.bits_per_dim, (long long)ev.images);
  }
  model->save(a.output, meta);
  return 0;
}

}  // namespace lt::app
