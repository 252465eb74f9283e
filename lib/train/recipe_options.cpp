// lt-train's options, one row each (lt/recipe_options.h): lt-train's
// command line is built from these rows, and set_recipe_option (lt.h's
// lt_recipe_set) sets a recipe's field by their names with their checks.
#include "lt/recipe_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "lt/error.h"

namespace lt {

std::string RecipeOption::name() const {
  const size_t at = flags.find("--");
  return flags.substr(at + 2, flags.find(',', at) - at - 2);
}

namespace {

RecipeOption opt(std::string flags, std::string group, RecipeOption::Field field, std::string help) {
  RecipeOption o;
  o.flags = std::move(flags);
  o.group = std::move(group);
  o.field = field;
  o.help = std::move(help);
  return o;
}

}  // namespace

const std::vector<RecipeOption>& recipe_options() {
  using R = TrainingRecipe;
  static const std::vector<RecipeOption> table = {
      opt("--score", "", &R::score,
          "with --export of a speech model: a manifest whose PER (decoded with --beam) goes into the metadata as speech.per.NAME, NAME its file name without .tsv (repeatable)").no_default(),
      opt("--average", "", &R::average,
          "with --export: checkpoints of -m's model whose parameters are averaged with its own, each counting once (checkpoint averaging, model soups)").no_default(),
      opt("--note", "", &R::notes,
          "with --export: KEY=TEXT written into the metadata as note.KEY, such as how the training data was made (repeatable)").no_default(),
      opt("--recurrent", "", &R::recurrent,
          "with --eval: score through the recurrent step, position by position, as generation runs (default: the parallel pass)").no_default(),
      opt("--task", "", &R::task,
          "image, copy or asr").one_of({"image", "copy", "asr"}),
      opt("--data", "", &R::data,
          "dataset folder: MNIST/Fashion-MNIST IDX, CIFAR-10 binary or PNGs; asr: a manifest TSV or a LibriSpeech folder").no_default(),
      opt("-m,--model", "", &R::model,
          "checkpoint to evaluate or export").no_default(),
      opt("-o,--output", "", &R::output,
          "checkpoint written during training (and by --export)"),
      opt("--init", "", &R::init,
          "start from this model's parameters and architecture with a fresh optimizer at step 0 (ignored when --resume finds --output)").no_default().existing_file(),
      opt("--resume", "", &R::resume,
          "continue training --output: its model (architecture flags, if repeated, must match it), optimizer state and step, and its seed, batch, steps, schedule and evaluation and checkpoint intervals unless given").no_default(),
      opt("--preset", "model", &R::preset,
          "mnist or cifar10 (default: from the image size); copy: the paper's copy model"),
      opt("--layers", "model", &R::layers,
          "transformer layers (asr --encoder bilstm: LSTM layers, default 3)"),
      opt("--d-model", "model", &R::d_model,
          "model width = heads x head dim (asr --encoder bilstm: hidden units per direction, default 320)"),
      opt("--heads", "model", &R::heads,
          "attention heads"),
      opt("--ff-dim", "model", &R::ff_dim,
          "feed-forward width (default 4 x d-model)"),
      opt("--ff-conv", "model", &R::ff_conv,
          "taps of a depthwise convolution over positions in each feed-forward sub-layer, at most 31 (0: none): centred and odd in a bidirectional model, over the position and those before it in a causal one").non_negative(),
      opt("--mixtures", "model", &R::mixtures,
          "logistic mixture components"),
      opt("--attention", "model", &R::attention,
          "causal-linear, softmax or lsh-N (Reformer LSH attention with N hashing rounds: lsh-1, lsh-4); asr: linear (bidirectional, its default), softmax, lsh-N, or causal- before any of them"),
      opt("--feature-map", "model", &R::feature_map,
          "elu (elu(x)+1), relu, or favor (FAVOR+ positive orthogonal random features, Performer)"),
      opt("--features", "model", &R::features,
          "favor: random features per head, even (0: E ln E rounded up to even)").non_negative(),
      opt("--feature-redraw", "model", &R::feature_redraw,
          "favor: draw the random features anew every this many steps (0: never)").non_negative(),
      opt("--output-head", "model", &R::output_head,
          "mol (mixture of logistics) or categorical"),
      opt("--dropout", "model", &R::dropout,
          "dropout while training (negative: the preset's 0.1)"),
      opt("--optimizer", "optimization", &R::optimizer,
          "radam or adam"),
      opt("--lr", "optimization", &R::lr,
          "learning rate (0: the preset's)"),
      opt("--schedule", "optimization", &R::schedule,
          "constant, step or cosine"),
      opt("--milestones", "optimization", &R::milestones,
          "step schedule: steps where lr is multiplied by --gamma").no_default(),
      opt("--gamma", "optimization", &R::gamma,
          "step schedule factor"),
      opt("--warmup", "optimization", &R::warmup,
          "linear warm-up steps"),
      opt("--min-lr", "optimization", &R::min_lr,
          "cosine schedule floor"),
      opt("--clip", "optimization", &R::clip,
          "per-parameter gradient norm clip (0: off)"),
      opt("-b,--batch", "optimization", &R::batch,
          "batch size (0: the preset's)"),
      opt("--micro-batch", "optimization", &R::micro_batch,
          "most rows of one forward pass per rank; a step runs its rows in passes of this size and adds their gradients (0: all at once; halved while a pass runs out of memory)").non_negative(),
      opt("--memory-limit", "optimization", &R::memory_limit,
          "GB of tensors a rank may hold on its device; a step that would pass it runs in smaller passes, as one that runs out of device memory does (0: no limit)").non_negative(),
      opt("--steps", "optimization", &R::steps,
          "total optimizer steps (0: from --epochs)"),
      opt("--epochs", "optimization", &R::epochs,
          "epochs, when --steps is 0"),
      opt("-s,--seed", "optimization", &R::seed,
          "seed of initialisation, data order and dropout"),
      opt("--valid", "speech", &R::valid,
          "validation manifest or LibriSpeech folder, scored every --eval-every steps and at the end").no_default(),
      opt("--lexicon", "speech", &R::lexicon,
          "pronunciations for words without phones (CMU dict format; default: pocketsphinx's CMU dict)").no_default(),
      opt("--encoder", "speech", &R::encoder,
          "transformer, or bilstm: the paper's Table 3 baseline, a bidirectional LSTM (3 layers of 320 per direction, PyTorch nn.LSTM's gates, dropout between layers) over the same frames and CTC head; no --stream").one_of({"transformer", "bilstm"}),
      opt("--frame-stack", "speech", &R::frame_stack,
          "10 ms filterbank frames stacked per encoder position (1: the paper's rate)").range(1, 16),
      opt("--context", "speech", &R::context,
          "10 ms frames of context beside each position's own, read by the input projection (Kaldi's splicing): before it, and after it for a model that sees both sides (-1: 8 for a transformer, 0 for the Bi-LSTM, whose recurrence has context of its own)").range(-1, 64),
      opt("--future", "speech", &R::future,
          "frames of context after each position (-1: --context's for a bidirectional encoder, 0 for a causal one, whose stream waits for them)").range(-1, 64),
      opt("--max-frames", "speech", &R::max_frames,
          "longest utterance in 10 ms frames; longer ones are left out").positive(),
      opt("--spec-augment", "speech", &R::spec_augment,
          "mask 2 frequency bands (<= 8 bins) and 2 time spans (<= 20 positions) of each training utterance").no_default(),
      opt("--vtlp", "speech", &R::vtlp,
          "vocal tract length perturbation: warp each training utterance's spectrum by a factor drawn from [1 - V, 1 + V] (0: none; 0.1 is usual)").range(0.0, 0.5),
      opt("--speed", "speech", &R::speed,
          "waveform augmentation, P or P:LO:HI: with probability P an utterance is played faster by a factor from LO..HI (tempo and pitch; 0.9:1.1 if not given)"),
      opt("--reverb", "speech", &R::reverb,
          "P or P:LO:HI: a synthetic room with a reverberation time of LO..HI seconds (0.2:1.0), 0-10 dB direct to reverberant"),
      opt("--noise", "speech", &R::noise,
          "P or P:LO:HI: noise at an SNR of LO..HI dB (5:25), coloured (white to brown) or a babble of 3-5 other training utterances"),
      opt("--telephone", "speech", &R::telephone,
          "P: the telephone band (8 kHz, 300 Hz high-pass), then G.711 mu-law or A-law"),
      opt("--codec", "speech", &R::codec,
          "P: GSM 6.10, MP3 or Opus at their lowest rates, encoded and decoded in memory"),
      opt("--clipping", "speech", &R::clipping,
          "P or P:LO:HI: a gain of LO..HI dB (6:20), then clipping at full scale"),
      opt("--beam", "speech", &R::beam,
          "--eval: CTC prefix beam width (1: greedy)").range(1, 1024),
      opt("--plateau", "optimization", &R::plateau,
          "halve the lr after this many evaluations without a better test loss (0: never; -1: the task's, asr 3)"),
      opt("--checkpoint-every", "", &R::checkpoint_every,
          "steps between checkpoints"),
      opt("--eval-every", "", &R::eval_every,
          "steps between test evaluations (0: at the end only)"),
      opt("--eval-images", "", &R::eval_images,
          "test images per evaluation (0: all)"),
      opt("--log", "", &R::log,
          "append metrics as JSON lines to this file").no_default(),
      opt("-f,--format", "", &R::format,
          "--eval output: text or json").one_of({"text", "json"}),
      opt("-d,--device", "", &R::device, ""),
      opt("--gpu-sum", "", &R::gpu_sum,
          "under mpirun with -d cuda, how the ranks' gradients are summed: nccl (GPU to GPU, one rank per GPU) or host (MPI through the host; ranks may share a GPU)").one_of({"nccl", "host"}),
      opt("--bf16", "", &R::bf16, ""),
      opt("--tf32", "", &R::tf32, ""),
      opt("-q,--quiet", "", &R::quiet,
          "no progress on stderr").no_default(),
  };
  return table;
}

namespace {

template <class T>
T number(const std::string& name, const std::string& value) {
  T v{};
  const char* end = value.data() + value.size();
  const auto [at, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || at != end || value.empty())
    throw Error(name + ": '" + value + "' is not " + (std::is_integral_v<T> ? "a whole number" : "a number"));
  if constexpr (std::is_floating_point_v<T>)
    check(std::isfinite(v), name + ": '" + value + "' is not a finite number");
  return v;
}

std::string shown(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

// Throws unless the row takes value (v: value as a number, for the numeric checks).
void check_takes(const RecipeOption& o, const std::string& name, const std::string& value, double v) {
  using T = RecipeOption::Takes;
  switch (o.takes) {
    case T::any:
      return;
    case T::non_negative:
      return check(v >= 0, name + ": " + value + " is below 0");
    case T::positive:
      return check(v >= 1, name + ": " + value + " is below 1");
    case T::range:
      return check(v >= o.lo && v <= o.hi, name + ": " + value + " is outside " + shown(o.lo) + ".." + shown(o.hi));
    case T::choices: {
      std::string list;
      for (const std::string& c : o.choices) {
        if (c == value) return;
        list += (list.empty() ? "" : ", ") + c;
      }
      throw Error(name + ": '" + value + "' is not one of " + list);
    }
    case T::existing_file:
      return check(std::filesystem::is_regular_file(value), name + ": " + value + ": no such file");
  }
}

}  // namespace

void set_recipe_option(TrainingRecipe& recipe, const std::string& option, const std::string& value) {
  const std::vector<RecipeOption>& table = recipe_options();
  auto it = std::find_if(table.begin(), table.end(), [&](const RecipeOption& o) { return o.name() == option; });
  check(it != table.end(), "'" + option + "' is not an option of lt-train (its long flags, without the dashes)");
  const std::string name = "--" + option;
  std::visit(
      [&](auto member) {
        auto& field = recipe.*member;
        using F = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<F, std::string>) {
          check_takes(*it, name, value, 0);
          field = value;
        } else if constexpr (std::is_same_v<F, bool>) {
          check(value == "true" || value == "false", name + ": '" + value + "' is not true or false");
          field = value == "true";
        } else if constexpr (std::is_same_v<F, std::vector<std::string>>) {
          field.push_back(value);  // repeatable: each call adds one
        } else if constexpr (std::is_same_v<F, std::vector<int64_t>>) {
          field.push_back(number<int64_t>(name, value));
        } else {
          const F v = number<F>(name, value);
          check_takes(*it, name, value, double(v));
          field = v;
        }
      },
      it->field);
  recipe.given.insert(name);
}

}  // namespace lt
