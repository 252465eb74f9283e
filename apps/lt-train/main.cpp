// lt-train: trains the paper's models (pixel-by-pixel image models, the copy
// task, CTC phoneme recognition), evaluates checkpoints (--eval) and exports
// weights without the optimizer state (--export). The flags fill a
// TrainingRecipe and the run is the library's (lt/training_run.h). Results on
// stdout, progress on stderr.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

#include "command_line.h"
#include "common_options.h"
#include "lt/backend.h"
#include "lt/error.h"
#include "lt/precision_flags.h"
#include "lt/training_run.h"
#include "lt/world.h"
#include "process_setup.h"

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills at once
}

// The exit of a run that did not finish: its message (rank 0's, when every
// rank stopped at the same step) and status code.
int report_unfinished(const lt::TrainResult& r, const std::string& output) {
  const bool report = lt::World::get().leader();
  if (r.status == lt::TrainStatus::diverged) {
    if (report) std::fprintf(stderr, "lt-train: %s\n", r.message.c_str());
    return 1;
  }
  if (report)
    std::fprintf(stderr, "lt-train: interrupted at step %lld; checkpoint written to %s (continue with --resume)\n",
                 (long long)r.step, output.c_str());
  return 130;
}
}  // namespace

// training: a few large parallel regions, on all cores even when others run
LT_BEFORE_LIBRARIES(lt::app::setup_process<lt::app::UnderLoad::all_cores>);

int main(int argc, char** argv) {
  lt::TrainingRecipe a;  // the run; the mode and threads are the command line's own
  bool eval = false, export_ = false;
  int threads = 0;
  CLI::App app{"lt-train: train linear-transformer models (image generation, copy task, speech recognition) and evaluate them"};
  app.set_help_flag("-h,--help", "show every option with its default");

  auto* modes = app.add_option_group("mode", "what to do (default: train)");
  modes->add_flag("--eval", eval, "evaluate -m CKPT on the test split of --data: bits/dim (copy: accuracy; speech: PER on --data)");
  modes->add_flag("--export", export_, "write -m CKPT without optimizer state to -o, with its test bits/dim (images: of --data; speech: PER of each --score manifest)");
  app.add_option("--score", a.score, "with --export of a speech model: a manifest whose PER (decoded with --beam) goes into the metadata as speech.per.NAME, NAME its file name without .tsv (repeatable)");
  app.add_option("--average", a.average, "with --export: checkpoints of -m's model whose parameters are averaged with its own, each counting once (checkpoint averaging, model soups)");
  app.add_option("--note", a.notes, "with --export: KEY=TEXT written into the metadata as note.KEY, such as how the training data was made (repeatable)");

  app.add_flag("--recurrent", a.recurrent, "with --eval: score through the recurrent step, position by position, as generation runs (default: the parallel pass)");
  app.add_option("--task", a.task, "image, copy or asr")->capture_default_str()->check(CLI::IsMember({"image", "copy", "asr"}));
  app.add_option("--data", a.data, "dataset folder: MNIST/Fashion-MNIST IDX, CIFAR-10 binary or PNGs; asr: a manifest TSV or a LibriSpeech folder");
  app.add_option("-m,--model", a.model, "checkpoint to evaluate or export");
  app.add_option("-o,--output", a.output, "checkpoint written during training (and by --export)")->capture_default_str();
  app.add_option("--init", a.init, "start from this model's parameters and architecture with a fresh optimizer at step 0 (ignored when --resume finds --output)")->check(CLI::ExistingFile);
  app.add_flag("--resume", a.resume, "continue training --output: its model (architecture flags, if repeated, must match it), optimizer state and step, and its seed, batch, steps, schedule and evaluation and checkpoint intervals unless given");

  auto* model = app.add_option_group("model", "model (0 or empty: the preset's value)");
  model->add_option("--preset", a.preset, "mnist or cifar10 (default: from the image size); copy: the paper's copy model")->capture_default_str();
  model->add_option("--layers", a.layers, "transformer layers (asr --encoder bilstm: LSTM layers, default 3)")->capture_default_str();
  model->add_option("--d-model", a.d_model, "model width = heads x head dim (asr --encoder bilstm: hidden units per direction, default 320)")->capture_default_str();
  model->add_option("--heads", a.heads, "attention heads")->capture_default_str();
  model->add_option("--ff-dim", a.ff_dim, "feed-forward width (default 4 x d-model)")->capture_default_str();
  model->add_option("--ff-conv", a.ff_conv, "taps of a depthwise convolution over positions in each feed-forward sub-layer, at most 31 (0: none): centred and odd in a bidirectional model, over the position and those before it in a causal one")->capture_default_str()->check(lt::app::kNonNegative);
  model->add_option("--mixtures", a.mixtures, "logistic mixture components")->capture_default_str();
  model->add_option("--attention", a.attention, "causal-linear, softmax or lsh-N (Reformer LSH attention with N hashing rounds: lsh-1, lsh-4); asr: linear (bidirectional, its default), softmax, lsh-N, or causal- before any of them")->capture_default_str();
  model->add_option("--feature-map", a.feature_map, "elu (elu(x)+1), relu, or favor (FAVOR+ positive orthogonal random features, Performer)")->capture_default_str();
  model->add_option("--features", a.features, "favor: random features per head, even (0: E ln E rounded up to even)")->capture_default_str()->check(lt::app::kNonNegative);
  model->add_option("--feature-redraw", a.feature_redraw, "favor: draw the random features anew every this many steps (0: never)")->capture_default_str()->check(lt::app::kNonNegative);
  model->add_option("--output-head", a.output_head, "mol (mixture of logistics) or categorical")->capture_default_str();
  model->add_option("--dropout", a.dropout, "dropout while training (negative: the preset's 0.1)")->capture_default_str();

  auto* optim = app.add_option_group("optimization");
  optim->add_option("--optimizer", a.optimizer, "radam or adam")->capture_default_str();
  optim->add_option("--lr", a.lr, "learning rate (0: the preset's)")->capture_default_str();
  optim->add_option("--schedule", a.schedule, "constant, step or cosine")->capture_default_str();
  optim->add_option("--milestones", a.milestones, "step schedule: steps where lr is multiplied by --gamma");
  optim->add_option("--gamma", a.gamma, "step schedule factor")->capture_default_str();
  optim->add_option("--warmup", a.warmup, "linear warm-up steps")->capture_default_str();
  optim->add_option("--min-lr", a.min_lr, "cosine schedule floor")->capture_default_str();
  optim->add_option("--clip", a.clip, "per-parameter gradient norm clip (0: off)")->capture_default_str();
  optim->add_option("-b,--batch", a.batch, "batch size (0: the preset's)")->capture_default_str();
  optim->add_option("--micro-batch", a.micro_batch, "most rows of one forward pass per rank; a step runs its rows in passes of this size and adds their gradients (0: all at once; halved while a pass runs out of memory)")->capture_default_str()->check(CLI::NonNegativeNumber);
  optim->add_option("--memory-limit", a.memory_limit, "GB of tensors a rank may hold on its device; a step that would pass it runs in smaller passes, as one that runs out of device memory does (0: no limit)")->capture_default_str()->check(CLI::NonNegativeNumber);
  optim->add_option("--steps", a.steps, "total optimizer steps (0: from --epochs)")->capture_default_str();
  optim->add_option("--epochs", a.epochs, "epochs, when --steps is 0")->capture_default_str();
  optim->add_option("-s,--seed", a.seed, "seed of initialisation, data order and dropout")->capture_default_str();

  auto* speech = app.add_option_group("speech", "--task asr");
  speech->add_option("--valid", a.valid, "validation manifest or LibriSpeech folder, scored every --eval-every steps and at the end");
  speech->add_option("--lexicon", a.lexicon, "pronunciations for words without phones (CMU dict format; default: pocketsphinx's CMU dict)");
  speech->add_option("--encoder", a.encoder, "transformer, or bilstm: the paper's Table 3 baseline, a bidirectional LSTM (3 layers of 320 per direction, PyTorch nn.LSTM's gates, dropout between layers) over the same frames and CTC head; no --stream")->capture_default_str()->check(CLI::IsMember({"transformer", "bilstm"}));
  speech->add_option("--frame-stack", a.frame_stack, "10 ms filterbank frames stacked per encoder position (1: the paper's rate)")->capture_default_str()->check(CLI::Range(1, 16));
  speech->add_option("--context", a.context, "10 ms frames of context beside each position's own, read by the input projection (Kaldi's splicing): before it, and after it for a model that sees both sides (-1: 8 for a transformer, 0 for the Bi-LSTM, whose recurrence has context of its own)")->capture_default_str()->check(CLI::Range(-1, 64));
  speech->add_option("--future", a.future, "frames of context after each position (-1: --context's for a bidirectional encoder, 0 for a causal one, whose stream waits for them)")->capture_default_str()->check(CLI::Range(-1, 64));
  speech->add_option("--max-frames", a.max_frames, "longest utterance in 10 ms frames; longer ones are left out")->capture_default_str()->check(CLI::PositiveNumber);
  speech->add_flag("--spec-augment", a.spec_augment, "mask 2 frequency bands (<= 8 bins) and 2 time spans (<= 20 positions) of each training utterance");
  speech->add_option("--vtlp", a.vtlp, "vocal tract length perturbation: warp each training utterance's spectrum by a factor drawn from [1 - V, 1 + V] (0: none; 0.1 is usual)")->capture_default_str()->check(CLI::Range(0.0, 0.5));
  speech->add_option("--speed", a.speed, "waveform augmentation, P or P:LO:HI: with probability P an utterance is played faster by a factor from LO..HI (tempo and pitch; 0.9:1.1 if not given)")->capture_default_str();
  speech->add_option("--reverb", a.reverb, "P or P:LO:HI: a synthetic room with a reverberation time of LO..HI seconds (0.2:1.0), 0-10 dB direct to reverberant")->capture_default_str();
  speech->add_option("--noise", a.noise, "P or P:LO:HI: noise at an SNR of LO..HI dB (5:25), coloured (white to brown) or a babble of 3-5 other training utterances")->capture_default_str();
  speech->add_option("--telephone", a.telephone, "P: the telephone band (8 kHz, 300 Hz high-pass), then G.711 mu-law or A-law")->capture_default_str();
  speech->add_option("--codec", a.codec, "P: GSM 6.10, MP3 or Opus at their lowest rates, encoded and decoded in memory")->capture_default_str();
  speech->add_option("--clipping", a.clipping, "P or P:LO:HI: a gain of LO..HI dB (6:20), then clipping at full scale")->capture_default_str();
  speech->add_option("--beam", a.beam, "--eval: CTC prefix beam width (1: greedy)")->capture_default_str()->check(CLI::Range(1, 1024));
  optim->add_option("--plateau", a.plateau, "halve the lr after this many evaluations without a better test loss (0: never; -1: the task's, asr 3)")->capture_default_str();

  app.add_option("--checkpoint-every", a.checkpoint_every, "steps between checkpoints")->capture_default_str();
  app.add_option("--eval-every", a.eval_every, "steps between test evaluations (0: at the end only)")->capture_default_str();
  app.add_option("--eval-images", a.eval_images, "test images per evaluation (0: all)")->capture_default_str();
  app.add_option("--log", a.log, "append metrics as JSON lines to this file");
  app.add_option("-f,--format", a.format, "--eval output: text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  lt::app::add_device_option(app, a.device);
  app.add_option("--gpu-sum", a.gpu_sum, "under mpirun with -d cuda, how the ranks' gradients are summed: nccl (GPU to GPU, one rank per GPU) or host (MPI through the host; ranks may share a GPU)")->capture_default_str()->check(CLI::IsMember({"nccl", "host"}));
  lt::app::add_threads_option(app, threads);
  lt::app::add_precision_flags(app, a.bf16, a.tf32, lt::app::PrecisionUse::training);
  app.add_flag("-q,--quiet", a.quiet, "no progress on stderr");

  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-train"); status >= 0) return status;
  for (int i = 0; i < argc; ++i) a.command += (i ? " " : "") + std::string(argv[i]);
  for (const CLI::Option* o : app.get_options([](const CLI::Option* o) { return o->count() > 0; }))
    if (!o->get_lnames().empty()) a.given.insert("--" + o->get_lnames().front());
  for (const auto* group : app.get_subcommands([](const CLI::App*) { return true; }))
    for (const CLI::Option* o : group->get_options([](const CLI::Option* o) { return o->count() > 0; }))
      if (!o->get_lnames().empty()) a.given.insert("--" + o->get_lnames().front());
  try {
    lt::set_num_threads(threads);
    // Before the device is opened: a flag that cannot apply is the first thing to say.
    const lt::Device device = lt::parse_device(a.device);
    if (a.recurrent)
      lt::generation_precision(a.bf16, a.tf32, device);
    else
      lt::training_precision(a.bf16, a.tf32, device);
    lt::check(!(eval || export_) || lt::World::get().size() == 1,
              "--eval and --export run in one process: start them without mpirun");
    if (eval) return std::fputs(lt::evaluate_checkpoint(a).c_str(), stdout), 0;
    if (export_) return std::fputs(lt::export_checkpoint(a).c_str(), stdout), 0;
    std::signal(SIGINT, on_sigint);
    std::signal(SIGTERM, on_sigint);
    const lt::TrainResult r = lt::run_training(a, &g_stop);
    if (r.status != lt::TrainStatus::finished) return report_unfinished(r, a.output);
    if (lt::World::get().leader()) std::printf("%s\n", r.score.c_str());
    return 0;
  } catch (const std::exception& e) {
    // A rank that fails alone ends them all: the others wait in a collective.
    lt::World& world = lt::World::get();
    std::cerr << "lt-train: " << (world.size() > 1 ? world.describe() + ": " : "") << e.what() << "\n";
    if (world.size() > 1) world.abort(1);
    return 1;
  }
}
