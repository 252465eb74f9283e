// --eval and --export of a checkpoint, written once for every task family
// (the checkpoint's lt.model says which), with checkpoint averaging and notes.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "backend/device.h"
#include "common/error.h"
#include "task_family.h"
#include "train/recipe_options.h"
#include "train/training_run.h"

namespace lt {

namespace {

std::unique_ptr<TaskFamily> checkpoint_family(const std::string& kind) {
  if (kind == "copy") return copy_family();
  if (kind == "speech") return speech_family();
  return image_family();
}

// notes' KEY=TEXT entries as note.KEY, checked before any work is done.
std::map<std::string, std::string> parse_notes(const TrainingRecipe& a) {
  std::map<std::string, std::string> meta;
  for (const std::string& note : a.notes) {
    const auto [key, text] = split_note(note);
    meta["note." + key] = text;
  }
  return meta;
}

// params, loaded from ck (a.model), become the mean of its parameters and
// those of the a.average checkpoints (the same model: architecture is its
// metadata); meta's lt.average lists them all.
void average_models(const TrainingRecipe& a, const Checkpoint& ck, Parameters& params,
                    const std::map<std::string, std::string>& architecture, std::map<std::string, std::string>& meta) {
  if (a.average.empty()) return;
  std::vector<Checkpoint> others;
  std::string all = a.model;
  for (const std::string& path : a.average) {
    others.push_back(load_safetensors(path));
    all += ", " + path;
  }
  average_checkpoints(params, ck, others, architecture);
  meta["lt.average"] = all;
  std::fprintf(stderr, "%s: the mean of %zu checkpoints' parameters\n", a.name.c_str(), others.size() + 1);
}

}  // namespace

void refuse_recurrent(const TrainingRecipe& a) { check(!a.recurrent, "--recurrent is an option of --eval"); }
void refuse_export_options(const TrainingRecipe& a) {
  check(a.score.empty() && a.notes.empty() && a.average.empty(), "--score, --note and --average are options of --export");
}

std::string evaluate_checkpoint(const TrainingRecipe& a) {
  refuse_export_options(a);
  check(!a.model.empty(), "--eval needs -m CHECKPOINT");
  const std::string kind = load_safetensors(a.model).meta("lt.model", "image");
  if (kind == "copy") {
    refuse_options(a, kImageOnlyOptions, a.model + ", a copy-task model");
    refuse_options(a, kSpeechOnlyOptions, a.model + ", a copy-task model");
  } else if (kind == "speech") {
    refuse_options(a, kImageNotSpeechOptions, a.model + ", a speech model");
  } else {
    refuse_options(a, kSpeechOnlyOptions, a.model + ", an image model");
  }
  const Device device = parse_device(a.device);
  require_device(device);
  std::unique_ptr<TaskFamily> family = checkpoint_family(kind);
  family->load(a.model, device);
  return family->evaluate(a, device);
}

std::string export_checkpoint(const TrainingRecipe& a) {
  refuse_recurrent(a);
  check(!a.model.empty(), "--export needs -m CHECKPOINT");
  check(a.output != a.model, "--export: -o must differ from -m");
  const Checkpoint ck = load_safetensors(a.model);
  const std::string kind = ck.meta("lt.model", "image");
  check(kind == "speech" || a.score.empty(),
        "--score: " + a.model + " is not a speech model (an image or copy model's --export scores --data)");
  std::unique_ptr<TaskFamily> family = checkpoint_family(kind);
  SequenceModel& model = family->load(a.model, parse_device(a.device));
  const std::map<std::string, std::string> notes = parse_notes(a);
  std::map<std::string, std::string> meta;  // the training's metadata; saving adds the model's
  const std::map<std::string, std::string> own = family->model_metadata();
  for (const auto& [k, v] : ck.metadata)
    if (!own.count(k)) meta[k] = v;
  average_models(a, ck, model.params(), family->architecture(), meta);
  std::string report;
  family->score(a, meta, report);
  for (const auto& [k, v] : notes) meta[k] = v;
  return report + family->save(a.output, meta);
}

}  // namespace lt
