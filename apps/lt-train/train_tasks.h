// lt-train's options and its modes, one file per task.
#pragma once
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lt/optim.h"
#include "lt/safetensors.h"
#include "lt/transformer.h"

namespace lt::app {

// The options that fix a model's architecture: --init and --resume take them
// from the checkpoint instead.
inline constexpr const char* kArchitectureOptions[] = {"--preset", "--layers", "--d-model", "--heads", "--ff-dim", "--ff-conv",
                                                        "--mixtures", "--attention", "--feature-map", "--features",
                                                        "--output-head"};

struct TrainArgs {
  bool eval = false, export_ = false, resume = false, quiet = false;
  bool recurrent = false;  // --eval through the recurrent step
  bool bf16 = false;       // bf16 products (CPU): training and --eval; the state too with --recurrent
  bool tf32 = false;       // TF32 products (CUDA)
  // --export of a speech model: manifests to score into the metadata, and KEY=TEXT notes.
  std::vector<std::string> score, notes;
  std::vector<std::string> average;  // --export: checkpoints averaged with -m
  std::string task = "image", data, model, init, output = "model.safetensors";
  std::string preset, attention = "causal-linear", feature_map = "elu", output_head = "mol";
  int64_t layers = 0, d_model = 0, heads = 0, ff_dim = 0, ff_conv = 0, mixtures = 0, features = 0, feature_redraw = 0;
  float dropout = -1;
  std::string optimizer = "radam", schedule = "constant";
  float lr = 0, gamma = 0.1f, min_lr = 0, clip = 1.0f;
  std::vector<int64_t> milestones;
  int64_t warmup = 0, batch = 0, steps = 0, epochs = 1;
  uint64_t seed = 1;
  int64_t checkpoint_every = 500, eval_every = 0, eval_images = 0;
  std::string log, format = "text", device = "cpu";
  int threads = 0;
  int plateau = -1;  // evaluations without a better test loss before the lr is halved (-1: the task's default)
  // --task asr
  std::string valid, lexicon;
  std::string encoder = "transformer";  // or bilstm (the paper's Table 3 baseline)
  int frame_stack = 3;
  int context = -1, future = -1;  // context frames before and after a position (-1: the encoder's default)
  int64_t max_frames = 2400, beam = 1;
  bool spec_augment = false;
  float vtlp = 0;  // vocal tract warp: alpha in [1 - vtlp, 1 + vtlp] per utterance and step

  // The learning-rate schedule from the flags, with base_lr where --lr is 0.
  Schedule make_schedule(float base_lr, int64_t total_steps) const;
  // The command line, stored in checkpoints so weights say how they were
  // made; after --resume, the command that started the run, with this one
  // appended to the resumes before it.
  std::string command, resumed_with;
  // The recipe and architecture options given on the command line, by long name ("--seed").
  std::set<std::string> given;

  // --resume: every training option not given again (seed, batch, steps,
  // optimizer, lr and schedule, clip; bf16 products) from the checkpoint's
  // lt.train.* entries, the speech task's --spec-augment and --max-frames from its speech.* ones,
  // so that `lt-train --resume -o CKPT` sees the batches, dropout masks and
  // learning rates the uninterrupted run would have.
  void adopt_recipe(const Checkpoint& ck);
};

// Options of the image task that the copy task has no use for.
inline constexpr const char* kImageOnlyOptions[] = {"--data", "--init", "--preset", "--mixtures", "--output-head",
                                                    "--eval-images", "--recurrent"};
// Options of the speech task, and those of the image task it has no use for.
inline constexpr const char* kSpeechOnlyOptions[] = {"--valid", "--lexicon", "--frame-stack", "--context", "--future",
                                                     "--max-frames", "--spec-augment", "--vtlp", "--beam", "--encoder", "--score"};
// Options of the transformer that a Bi-LSTM encoder has no use for.
inline constexpr const char* kTransformerOnlyOptions[] = {"--heads", "--ff-dim", "--attention", "--feature-map",
                                                          "--features", "--feature-redraw"};
inline constexpr const char* kImageNotSpeechOptions[] = {"--preset", "--mixtures", "--output-head",
                                                         "--eval-images", "--recurrent"};
// Throws one line naming the first of options given and what it does not apply to.
template <size_t N>
void refuse_options(const TrainArgs& a, const char* const (&options)[N], const std::string& what) {
  for (const char* o : options)
    if (a.given.count(o)) throw Error(std::string(o) + " does not apply to " + what);
}

// --init takes the architecture from its model: architecture flags (and the
// extra ones a task names) are refused in one line naming the model.
void refuse_architecture_with_init(const TrainArgs& a, std::initializer_list<const char*> extra = {});

// --resume takes the architecture from the checkpoint. Architecture flags
// repeated on the command line (so that one line starts a run and resumes
// it) must describe that model: a flag, or --preset, asking for another value
// is refused in one line naming the checkpoint and both values.
struct ArchitectureField {
  const char* flag;
  std::string want, have;
};
std::vector<ArchitectureField> transformer_fields(const TransformerConfig& want, const TransformerConfig& have);
void check_resumed_architecture(const TrainArgs& a, const std::vector<ArchitectureField>& fields,
                                const std::string& path);

// A float as text that reads back to the same float (metadata).
std::string exact(float v);
// --export's --note KEY=TEXT entries into meta as note.KEY.
void add_notes(const TrainArgs& a, std::map<std::string, std::string>& meta);
// --average: params, loaded from ck (-m), become the mean of its parameters
// and those of the --average checkpoints (average_checkpoints: the same
// model, architecture its metadata); meta's lt.average lists them all.
void average_models(const TrainArgs& a, const Checkpoint& ck, Parameters& params,
                    const std::map<std::string, std::string>& architecture, std::map<std::string, std::string>& meta);

// The resolved recipe as the lt.train.* metadata adopt_recipe reads (the
// optimizer and seed come from Trainer::save_state).
std::map<std::string, std::string> recipe_metadata(const TrainArgs& a, const Schedule& s, int64_t batch,
                                                   int64_t steps);

int run_image_training(const TrainArgs& a, const std::atomic<bool>& stop);
int run_copy_training(const TrainArgs& a, const std::atomic<bool>& stop);
int run_asr_training(const TrainArgs& a, const std::atomic<bool>& stop);
int run_eval(const TrainArgs& a);    // image, copy or speech, from the checkpoint's lt.model
int run_export(const TrainArgs& a);  // image, copy or speech, from the checkpoint's lt.model

}  // namespace lt::app
