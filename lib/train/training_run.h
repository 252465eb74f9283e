// A training run from start to export, written once for every task family
// (image, copy, speech): start or resume, the recipe in checkpoint metadata,
// the loop, the final score; --eval and --export of a checkpoint, with
// checkpoint averaging. lt-train is flags over this header; a program that
// embeds lt fills the recipe itself.
//
//   lt::TrainingRecipe r;
//   r.task = "copy";
//   r.steps = 200;
//   r.output = "copy.safetensors";
//   lt::TrainResult result = lt::run_training(r, &stop);  // progress on stderr
//   std::puts(result.score.c_str());                      // the trained model's test score
//   r.model = r.output, r.output = "copy-export.safetensors";
//   std::fputs(lt::export_checkpoint(r).c_str(), stdout); // without the optimizer state
//
// Results come back as text; only progress (unless quiet) goes to stderr.
//
// Fields are named after lt-train's flags (docs/training.md has what each
// means); 0, empty or negative is the task's preset. Errors throw lt::Error
// with one line naming the option and the file.
#pragma once
#include <atomic>
#include <functional>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "optim/optimizer.h"
#include "train/training_loop.h"

namespace lt {

struct TrainingRecipe {
  std::string task = "image";  // image, copy or asr
  std::string data, valid, lexicon;  // the data (asr: a manifest or LibriSpeech folder); asr's validation set
  std::string model;                  // the checkpoint evaluate_checkpoint and export_checkpoint read
  std::string init;                   // start from this model's parameters with a fresh optimizer
  std::string output = "model.safetensors";  // the checkpoint written while training, or the export
  bool resume = false;  // continue training output if it exists
  bool quiet = false;   // no progress on stderr
  std::string name = "lt-train";  // the prefix of lines on stderr

  // Architecture (--init and --resume take it from the checkpoint).
  std::string preset, attention = "causal-linear", feature_map = "elu", output_head = "mol";
  int64_t layers = 0, d_model = 0, heads = 0, ff_dim = 0, ff_conv = 0, mixtures = 0, features = 0, feature_redraw = 0;
  float dropout = -1;
  std::string encoder = "transformer";  // asr: or bilstm (the paper's Table 3 baseline)
  int frame_stack = 3;
  int context = -1, future = -1;  // asr: context frames before and after a position (-1: the encoder's default)

  // Optimization.
  std::string optimizer = "radam", schedule = "constant";
  float lr = 0, gamma = 0.1f, min_lr = 0, clip = 1.0f;
  std::vector<int64_t> milestones;
  int64_t warmup = 0, batch = 0, steps = 0, epochs = 1;
  int64_t micro_batch = 0;  // the most rows of one forward pass per rank (0: the rank's whole share)
  double memory_limit = 0;  // GB of tensors a rank may hold on its device (0: what the device has)
  uint64_t seed = 1;
  int plateau = -1;  // evaluations without a better test loss before the lr is halved (-1: the task's default)
  int64_t checkpoint_every = 500, eval_every = 0, eval_images = 0;
  std::string log;  // metrics appended as JSON lines
  std::string device = "cpu";
  std::string gpu_sum = "nccl";  // under MPI with CUDA: nccl, or host (MPI through the host)
  bool bf16 = false;  // bf16 products (CPU): training and evaluation; the state too with recurrent
  bool tf32 = false;  // TF32 products (CUDA)

  // asr data.
  int64_t max_frames = 2400, beam = 1;
  bool spec_augment = false;
  float vtlp = 0;  // vocal tract warp: alpha in [1 - vtlp, 1 + vtlp] per utterance and step
  // Waveform augmentations, each "P" or "P:LO:HI" (WaveAugmentation).
  std::string speed = "0", reverb = "0", noise = "0", telephone = "0", codec = "0", clipping = "0";

  // Evaluation and export.
  bool recurrent = false;       // evaluate through the recurrent step
  std::string format = "text";  // evaluate_checkpoint's output: text or json
  std::vector<std::string> score, notes;  // export of a speech model: manifests to score; KEY=TEXT notes
  std::vector<std::string> average;       // export: checkpoints averaged with model

  // How the weights were made, stored in checkpoints: the command that
  // started the run and, after resumes, the commands that continued it.
  std::string command, resumed_with;
  // The recipe and architecture options set explicitly, by lt-train's long
  // flag ("--seed"): resume keeps the checkpoint's value of every other one,
  // and refuses an architecture option that disagrees with the checkpoint.
  std::set<std::string> given;

  // The learning-rate schedule, with base_lr where lr is 0.
  Schedule make_schedule(float base_lr, int64_t total_steps) const;
  // Every training option not given (seed, batch, steps, optimizer, lr and
  // schedule, clip; bf16 products; asr's augmentations and max_frames)
  // from the checkpoint's lt.train.* and speech.* metadata, so that a resumed
  // run sees the batches, dropout masks and learning rates the uninterrupted
  // run would have.
  void adopt(const Checkpoint& ck);
};

// Sets the field of lt-train's long flag `option` (without its dashes:
// "steps", "spec-augment") from its text as lt-train reads it ("true" or
// "false" for a flag; a repeatable option, such as "milestones" or "score",
// adds a value a call) and marks it given, as lt-train does. An unknown
// option or a value it cannot take is an lt::Error naming it.
void set_recipe_option(TrainingRecipe& recipe, const std::string& option, const std::string& value);

// Trains recipe.task until recipe.steps (or epochs), resuming recipe.output
// when recipe.resume finds it; a checkpoint every checkpoint_every steps, at
// the end and when *stop becomes true. Under mpirun or srun every rank runs
// it and the ranks share each step (train/world.h); rank 0 prints the run's
// first line and progress on stderr, and passes every event (steps,
// evaluations, checkpoints) to on_event, on the calling thread. A finished
// run's result holds its test score line.
TrainResult run_training(const TrainingRecipe& recipe, const std::atomic<bool>* stop = nullptr,
                         const std::function<void(const TrainEvent&)>& on_event = {});

// Scores recipe.model (image, copy or speech, from its lt.model) on its test
// data: the result as text or JSON (recipe.format), newline-ended.
std::string evaluate_checkpoint(const TrainingRecipe& recipe);

// Writes recipe.model without its optimizer state to recipe.output, averaged
// with recipe.average, with its test scores and recipe.notes in the
// metadata; returns a line per score and per file written.
std::string export_checkpoint(const TrainingRecipe& recipe);

}  // namespace lt
