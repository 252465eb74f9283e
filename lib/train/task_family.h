// One record per task family (image, copy, speech): its preset, how its model
// is made, loaded and checked, the training task it builds and how it scores.
// The run (training_run.cpp) and --eval / --export (checkpoint_commands.cpp)
// are written once over it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "train/training_run.h"

namespace lt {

class TaskFamily {
 public:
  virtual ~TaskFamily() = default;

  // Training: the model of the checkpoint being resumed (architecture options
  // given must describe it), or a new one.
  virtual SequenceModel& resume(const std::string& path, const TrainingRecipe& r, Device d) = 0;
  virtual SequenceModel& start(const TrainingRecipe& r, Device d) = 0;
  virtual int64_t default_batch() const = 0;
  virtual int64_t steps_per_epoch(int64_t batch) const = 0;
  virtual Schedule schedule(const TrainingRecipe& r, int64_t steps) const = 0;
  // The family's own metadata for checkpoints (an image's geometry, the dataset).
  virtual std::map<std::string, std::string> metadata(const TrainingRecipe& r) const = 0;
  // plateau when not given: evaluations without gain before the lr halves (0: never).
  virtual int default_plateau() const { return 0; }
  virtual TrainingTask& task(const TrainingRecipe& r, int64_t batch) = 0;
  virtual std::string description() const = 0;  // the task and its data, for the run's first line
  virtual bool reports_bits() const = 0;         // bits/dim (images) or loss and accuracy
  // The trained model's test scores: the result line for stdout (rank 0
  // prints it) and the log's last event.
  struct FinalScore {
    std::string line;
    nlohmann::json event;
  };
  virtual FinalScore finish(const TrainingRecipe& r, int64_t step, int64_t batch, const Precision& eval) = 0;

  // A checkpoint of the family, for --eval and --export.
  virtual SequenceModel& load(const std::string& path, Device d) = 0;
  // The model's metadata, which saving writes itself.
  virtual std::map<std::string, std::string> model_metadata() const = 0;
  // What checkpoints averaged with it must share (the model's metadata; a speech front end's too).
  virtual std::map<std::string, std::string> architecture() const { return model_metadata(); }
  // Its tensors beside the model's (a speech front end's statistics).
  virtual std::map<std::string, Tensor> tensors() const { return {}; }
  // Writes the model; a line for the export's report, or none.
  virtual std::string save(const std::string& path, const std::map<std::string, std::string>& meta) = 0;
  // --eval: scores the loaded model; the result (text or json), newline-ended.
  virtual std::string evaluate(const TrainingRecipe& r, Device d) = 0;
  // --export: test scores into meta, a line each added to report.
  virtual void score(const TrainingRecipe& r, std::map<std::string, std::string>& meta, std::string& report) = 0;
};

// Options of one mode given to another: --recurrent belongs to --eval;
// --score, --note and --average to --export.
void refuse_recurrent(const TrainingRecipe& r);
void refuse_export_options(const TrainingRecipe& r);

std::unique_ptr<TaskFamily> copy_family();
std::unique_ptr<TaskFamily> image_family();  // for a checkpoint
// For training: reads the data first, since the preset depends on the image size.
std::unique_ptr<TaskFamily> image_family(const std::string& data);
std::unique_ptr<TaskFamily> speech_family();

// The options that fix a model's architecture: init and resume take them from the checkpoint.
inline constexpr const char* kArchitectureOptions[] = {"--preset", "--layers", "--d-model", "--heads", "--ff-dim", "--ff-conv",
                                                        "--mixtures", "--attention", "--feature-map", "--features",
                                                        "--output-head"};
// Options of the image task that the copy task has no use for.
inline constexpr const char* kImageOnlyOptions[] = {"--data", "--init", "--preset", "--mixtures", "--output-head",
                                                    "--eval-images", "--recurrent"};
// Options of the speech task, and those of the image task it has no use for.
inline constexpr const char* kSpeechOnlyOptions[] = {"--valid", "--lexicon", "--frame-stack", "--context", "--future",
                                                     "--max-frames", "--spec-augment", "--vtlp", "--speed", "--reverb", "--noise",
                                                     "--telephone", "--codec", "--clipping", "--beam", "--encoder", "--score"};
inline constexpr const char* kImageNotSpeechOptions[] = {"--preset", "--mixtures", "--output-head",
                                                         "--eval-images", "--recurrent"};
// Options of the transformer that a Bi-LSTM encoder has no use for.
inline constexpr const char* kTransformerOnlyOptions[] = {"--heads", "--ff-dim", "--attention", "--feature-map",
                                                          "--features", "--feature-redraw"};
// Throws one line naming the first of options given and what it does not apply to.
template <size_t N>
void refuse_options(const TrainingRecipe& r, const char* const (&options)[N], const std::string& what) {
  for (const char* o : options)
    if (r.given.count(o)) throw Error(std::string(o) + " does not apply to " + what);
}

// init takes the architecture from its model: architecture options (and the
// extra ones a family names) are refused in one line naming the model.
void refuse_architecture_with_init(const TrainingRecipe& r, std::initializer_list<const char*> extra = {});

// resume takes the architecture from the checkpoint. Architecture options
// repeated (so that one command line starts a run and resumes it) must
// describe that model: an option, or preset, asking for another value is
// refused in one line naming the checkpoint and both values.
struct ArchitectureField {
  const char* flag;
  std::string want, have;
};
std::vector<ArchitectureField> transformer_fields(const TransformerConfig& want, const TransformerConfig& have);
void check_resumed_architecture(const TrainingRecipe& r, const std::vector<ArchitectureField>& fields,
                                const std::string& path);

// The transformer options over a family's preset.
void apply_transformer_options(const TrainingRecipe& r, TransformerConfig& t);

// A float as text that reads back to the same float (metadata).
std::string exact(float v);

// The resolved recipe as the lt.train.* metadata TrainingRecipe::adopt reads
// (the optimizer and seed come from Trainer::save_state).
std::map<std::string, std::string> recipe_metadata(const TrainingRecipe& r, const Schedule& s, int64_t batch,
                                                   int64_t steps);

}  // namespace lt
