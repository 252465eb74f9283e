// lt-train's options, one row each (train/recipe_options.h): lt-train's
// command line is built from these rows, and set_recipe_option (lt.h's
// lt_recipe_set) sets a recipe's field by their names; both check a value
// with check_recipe_value, against what its row says it takes.
#include "train/recipe_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "train/speech_training.h"

namespace lt {

std::string RecipeOption::name() const {
  const size_t at = flags.find("--");
  return flags.substr(at + 2, flags.find(',', at) - at - 2);
}

bool RecipeOption::whole() const {
  return std::visit(
      [](auto member) {
        using F = std::decay_t<decltype(std::declval<TrainingRecipe&>().*member)>;
        return std::is_integral_v<F> || std::is_same_v<F, std::vector<int64_t>>;
      },
      field);
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
  using T = RecipeOption::Takes;
  static const std::vector<RecipeOption> table = {
      opt("--score", "", &R::score,
          "with --export of a speech model: a manifest whose PER (decoded with --beam) goes into the metadata as speech.per.NAME, NAME its file name without .tsv (repeatable)").no_default().path(),
      opt("--average", "", &R::average,
          "with --export: checkpoints of -m's model whose parameters are averaged with its own, each counting once (checkpoint averaging, model soups)").no_default().path(),
      opt("--note", "", &R::notes,
          "with --export: KEY=TEXT written into the metadata as note.KEY, such as how the training data was made (repeatable)").no_default().as(T::note),
      opt("--recurrent", "", &R::recurrent,
          "with --eval: score through the recurrent step, position by position, as generation runs (default: the parallel pass)").no_default(),
      opt("--task", "", &R::task,
          "image, copy or asr").one_of({"image", "copy", "asr"}),
      opt("--data", "", &R::data,
          "dataset folder: MNIST/Fashion-MNIST IDX, CIFAR-10 binary or PNGs; asr: a manifest TSV or a LibriSpeech folder").no_default().path(),
      opt("-m,--model", "", &R::model,
          "checkpoint to evaluate or export").no_default().path(),
      opt("-o,--output", "", &R::output,
          "checkpoint written during training (and by --export)").path(),
      opt("--init", "", &R::init,
          "start from this model's parameters and architecture with a fresh optimizer at step 0 (ignored when --resume finds --output)").no_default().existing_file(),
      opt("--resume", "", &R::resume,
          "continue training --output: its model (architecture flags, if repeated, must match it), optimizer state and step, and its seed, batch, steps, schedule and evaluation and checkpoint intervals unless given").no_default(),
      opt("--preset", "model", &R::preset,
          "mnist or cifar10 (default: from the image size); copy: the paper's copy model").one_of({"mnist", "cifar10"}),
      opt("--layers", "model", &R::layers,
          "transformer layers (0: the preset's; asr --encoder bilstm: LSTM layers, default 3)").at_least(1).or_value(0, "the preset's"),
      opt("--d-model", "model", &R::d_model,
          "model width = heads x head dim (0: the preset's; asr --encoder bilstm: hidden units per direction, default 320)").at_least(1).or_value(0, "the preset's"),
      opt("--heads", "model", &R::heads,
          "attention heads (0: the preset's)").at_least(1).or_value(0, "the preset's"),
      opt("--ff-dim", "model", &R::ff_dim,
          "feed-forward width (0: 4 x d-model)").at_least(1).or_value(0, "4 x d-model"),
      opt("--ff-conv", "model", &R::ff_conv,
          "taps of a depthwise convolution over positions in each feed-forward sub-layer, at most 31 (0: none): centred and odd in a bidirectional model, over the position and those before it in a causal one").range(1, 31).or_value(0, "none"),
      opt("--mixtures", "model", &R::mixtures,
          "logistic mixture components (0: the preset's)").at_least(1).or_value(0, "the preset's"),
      opt("--attention", "model", &R::attention,
          "causal-linear, softmax or lsh-N (Reformer LSH attention with N hashing rounds: lsh-1, lsh-4); asr: linear (bidirectional, its default), softmax, lsh-N, or causal- before any of them").as(T::attention),
      opt("--feature-map", "model", &R::feature_map,
          "elu (elu(x)+1), relu, or favor (FAVOR+ positive orthogonal random features, Performer)").one_of({"elu", "relu", "favor"}),
      opt("--features", "model", &R::features,
          "favor: random features per head, even (0: E ln E rounded up to even)").range(2, 65536).even_only().or_value(0, "E ln E rounded up to even"),
      opt("--feature-redraw", "model", &R::feature_redraw,
          "favor: draw the random features anew every this many steps (0: never)").at_least(1).or_value(0, "never"),
      opt("--output-head", "model", &R::output_head,
          "mol (mixture of logistics) or categorical").one_of({"mol", "categorical"}),
      opt("--dropout", "model", &R::dropout,
          "dropout while training, below 1 (-1: the preset's 0.1)").at_least(0).less_than(1).or_value(-1, "the preset's"),
      opt("--optimizer", "optimization", &R::optimizer,
          "radam or adam").one_of({"radam", "adam"}),
      opt("--lr", "optimization", &R::lr,
          "learning rate (0: the preset's)").more_than(0).or_value(0, "the preset's"),
      opt("--schedule", "optimization", &R::schedule,
          "constant, step or cosine").one_of({"constant", "step", "cosine"}),
      opt("--milestones", "optimization", &R::milestones,
          "step schedule: steps where lr is multiplied by --gamma").no_default().at_least(1),
      opt("--gamma", "optimization", &R::gamma,
          "step schedule factor").more_than(0),
      opt("--warmup", "optimization", &R::warmup,
          "linear warm-up steps").at_least(0),
      opt("--min-lr", "optimization", &R::min_lr,
          "cosine schedule floor").at_least(0),
      opt("--clip", "optimization", &R::clip,
          "per-parameter gradient norm clip (0: off)").more_than(0).or_value(0, "off"),
      opt("-b,--batch", "optimization", &R::batch,
          "batch size (0: the preset's)").at_least(1).or_value(0, "the preset's"),
      opt("--micro-batch", "optimization", &R::micro_batch,
          "most rows of one forward pass per rank; a step runs its rows in passes of this size and adds their gradients (0: all at once; halved while a pass runs out of memory)").at_least(1).or_value(0, "all at once"),
      opt("--memory-limit", "optimization", &R::memory_limit,
          "GB of tensors a rank may hold on its device; a step that would pass it runs in smaller passes, as one that runs out of device memory does (0: no limit)").more_than(0).or_value(0, "no limit"),
      opt("--steps", "optimization", &R::steps,
          "total optimizer steps (0: from --epochs)").at_least(1).or_value(0, "from --epochs"),
      opt("--epochs", "optimization", &R::epochs,
          "epochs, when --steps is 0").at_least(1),
      opt("-s,--seed", "optimization", &R::seed,
          "seed of initialisation, data order and dropout").at_least(0),
      opt("--valid", "speech", &R::valid,
          "validation manifest or LibriSpeech folder, scored every --eval-every steps and at the end").no_default().path(),
      opt("--lexicon", "speech", &R::lexicon,
          "pronunciations for words without phones (CMU dict format; default: pocketsphinx's CMU dict)").no_default().path(),
      opt("--encoder", "speech", &R::encoder,
          "transformer, or bilstm: the paper's Table 3 baseline, a bidirectional LSTM (3 layers of 320 per direction, PyTorch nn.LSTM's gates, dropout between layers) over the same frames and CTC head; no --stream").one_of({"transformer", "bilstm"}),
      opt("--frame-stack", "speech", &R::frame_stack,
          "10 ms filterbank frames stacked per encoder position (1: the paper's rate)").range(1, 16),
      opt("--context", "speech", &R::context,
          "10 ms frames of context beside each position's own, read by the input projection (Kaldi's splicing): before it, and after it for a model that sees both sides (-1: 8 for a transformer, 0 for the Bi-LSTM, whose recurrence has context of its own)").range(0, 64).or_value(-1, "the encoder's"),
      opt("--future", "speech", &R::future,
          "frames of context after each position (-1: --context's for a bidirectional encoder, 0 for a causal one, whose stream waits for them)").range(0, 64).or_value(-1, "the encoder's"),
      opt("--max-frames", "speech", &R::max_frames,
          "longest utterance in 10 ms frames; longer ones are left out").at_least(1),
      opt("--spec-augment", "speech", &R::spec_augment,
          "mask 2 frequency bands (<= 8 bins) and 2 time spans (<= 20 positions) of each training utterance").no_default(),
      opt("--vtlp", "speech", &R::vtlp,
          "vocal tract length perturbation: warp each training utterance's spectrum by a factor drawn from [1 - V, 1 + V] (0: none; 0.1 is usual)").range(0.0, 0.5),
      opt("--speed", "speech", &R::speed,
          "waveform augmentation, P or P:LO:HI: with probability P an utterance is played faster by a factor from LO..HI (tempo and pitch; 0.9:1.1 if not given)").as(T::draw),
      opt("--reverb", "speech", &R::reverb,
          "P or P:LO:HI: a synthetic room with a reverberation time of LO..HI seconds (0.2:1.0), 0-10 dB direct to reverberant").as(T::draw),
      opt("--noise", "speech", &R::noise,
          "P or P:LO:HI: noise at an SNR of LO..HI dB (5:25), coloured (white to brown) or a babble of 3-5 other training utterances").as(T::draw),
      opt("--telephone", "speech", &R::telephone,
          "P: the telephone band (8 kHz, 300 Hz high-pass), then G.711 mu-law or A-law").as(T::probability),
      opt("--codec", "speech", &R::codec,
          "P: GSM 6.10, MP3 or Opus at their lowest rates, encoded and decoded in memory").as(T::probability),
      opt("--clipping", "speech", &R::clipping,
          "P or P:LO:HI: a gain of LO..HI dB (6:20), then clipping at full scale").as(T::draw),
      opt("--beam", "speech", &R::beam,
          "--eval: CTC prefix beam width (1: greedy)").range(1, 1024),
      opt("--plateau", "optimization", &R::plateau,
          "halve the lr after this many evaluations without a better test loss (0: never; -1: the task's, asr 3)").at_least(1).or_value(0, "never").or_value(-1, "the task's"),
      opt("--checkpoint-every", "", &R::checkpoint_every,
          "steps between checkpoints (0: only at the end)").at_least(1).or_value(0, "only at the end"),
      opt("--eval-every", "", &R::eval_every,
          "steps between test evaluations (0: at the end only)").at_least(1).or_value(0, "at the end only"),
      opt("--eval-images", "", &R::eval_images,
          "test images per evaluation (0: all)").at_least(1).or_value(0, "all"),
      opt("--log", "", &R::log,
          "append metrics as JSON lines to this file").no_default().path(),
      opt("-f,--format", "", &R::format,
          "--eval output: text or json").one_of({"text", "json"}),
      opt("-d,--device", "", &R::device, "").one_of({"cpu", "cuda"}),
      opt("--gpu-sum", "", &R::gpu_sum,
          "under mpirun with -d cuda, how the ranks' gradients are summed: nccl (GPU to GPU, one rank per GPU) or host (MPI through the host; ranks may share a GPU)").one_of({"nccl", "host"}),
      opt("--bf16", "", &R::bf16, ""),
      opt("--tf32", "", &R::tf32, ""),
      opt("-q,--quiet", "", &R::quiet,
          "no progress on stderr").no_default(),
  };
  return table;
}

const RecipeOption& recipe_option(const std::string& name) {
  const std::vector<RecipeOption>& table = recipe_options();
  auto it = std::find_if(table.begin(), table.end(), [&](const RecipeOption& o) { return o.name() == name; });
  check(it != table.end(), "'" + name + "' is not an option of lt-train (its long flags, without the dashes)");
  return *it;
}

namespace {

std::string shown(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// value as a number of the field's kind; false when it is not one (or out of the type's range).
template <class F>
bool parse_number(const std::string& value, double& out) {
  using N = std::conditional_t<std::is_same_v<F, std::vector<int64_t>>, int64_t, F>;
  N v{};
  const char* end = value.data() + value.size();
  const auto [at, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || at != end || value.empty()) return false;
  if constexpr (std::is_floating_point_v<N>)
    if (!std::isfinite(v)) return false;
  out = double(v);
  return true;
}

// "LO..HI" or the one bound a row has.
std::string bounds_text(const RecipeOption& o) {
  const bool has_lo = std::isfinite(o.lo), has_hi = std::isfinite(o.hi);
  if (has_lo && has_hi && !o.above && !o.below) return " in " + shown(o.lo) + ".." + shown(o.hi);
  std::string s;
  if (has_lo) s += std::string(o.above ? " > " : " >= ") + shown(o.lo);
  if (has_hi) s += std::string(has_lo ? " and" : "") + (o.below ? " < " : " <= ") + shown(o.hi);
  return s;
}

bool is_attention(const std::string& value) {
  std::string rest = value.rfind("causal-", 0) == 0 ? value.substr(7) : value;
  if (rest == "linear" || rest == "softmax") return true;
  if (rest.rfind("lsh-", 0) != 0) return false;
  const std::string n = rest.substr(4);
  if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos || n[0] == '0') return false;
  return std::stoi(n) <= 64;
}

}  // namespace

std::string RecipeOption::takes_text() const {
  using T = Takes;
  switch (takes) {
    case T::flag:
      return "true or false";
    case T::number: {
      std::string s = std::string(whole() ? "a whole number" : "a number") + bounds_text(*this);
      if (even) s = (whole() ? "an even whole number" : "an even number") + bounds_text(*this);
      for (const Sentinel& z : sentinels) s += ", or " + shown(z.value) + " (" + z.meaning + ")";
      return s;
    }
    case T::choices: {
      std::string list = "one of ";
      for (size_t i = 0; i < choices.size(); ++i) list += (i == 0 ? "" : ", ") + choices[i];
      return list;
    }
    case T::path:
      return "a path";
    case T::existing_file:
      return "an existing file";
    case T::attention:
      return "causal-linear, linear, softmax, lsh-N (N in 1..64), or causal- before linear, softmax or lsh-N";
    case T::draw:
      return "P or P:LO:HI, a probability P in 0..1 and LO <= HI";
    case T::probability:
      return "a probability in 0..1";
    case T::note:
      return "KEY=TEXT, KEY of letters, digits, '_', '.' or '-'";
  }
  return "";
}

std::pair<std::string, std::string> split_note(const std::string& note) {
  const size_t eq = note.find('=');
  const std::string key = note.substr(0, eq);
  check(eq != std::string::npos && !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
        }),
        "--note: '" + note + "' is not " + recipe_option("note").takes_text());
  return {key, note.substr(eq + 1)};
}

void check_recipe_value(const RecipeOption& o, const std::string& value) {
  using T = RecipeOption::Takes;
  const std::string refused = "--" + o.name() + ": '" + value + "' is not " + o.takes_text();
  switch (o.takes) {
    case T::flag:
      return check(value == "true" || value == "false", refused);
    case T::number: {
      double v = 0;
      const bool number = std::visit(
          [&](auto member) {
            using F = std::decay_t<decltype(std::declval<TrainingRecipe&>().*member)>;
            if constexpr ((std::is_arithmetic_v<F> && !std::is_same_v<F, bool>) || std::is_same_v<F, std::vector<int64_t>>)
              return parse_number<F>(value, v);
            else
              return false;
          },
          o.field);
      check(number, refused);
      for (const RecipeOption::Sentinel& z : o.sentinels)
        if (v == z.value) return;
      const bool in = (o.above ? v > o.lo : v >= o.lo) && (o.below ? v < o.hi : v <= o.hi) &&
                      (!o.even || std::fmod(v, 2.0) == 0);
      return check(in, refused);
    }
    case T::choices:
      return check(std::find(o.choices.begin(), o.choices.end(), value) != o.choices.end(), refused);
    case T::path:
      return check(!value.empty(), refused);
    case T::existing_file:
      check(!value.empty(), refused);
      check(std::filesystem::exists(value), "--" + o.name() + ": " + value + ": no such file");
      return check(std::filesystem::is_regular_file(value), "--" + o.name() + ": " + value + ": not a file");
    case T::attention:
      return check(is_attention(value), refused);
    case T::draw:
    case T::probability: {
      const bool one = o.takes == T::probability;
      bool ok = !one || value.find(':') == std::string::npos;
      try {
        parse_wave_draw("--" + o.name(), value, {});
      } catch (const Error&) {
        ok = false;
      }
      return check(ok, refused);
    }
    case T::note:
      split_note(value);
      return;
  }
}

std::string recipe_value_text(const TrainingRecipe& recipe, const RecipeOption& row) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = recipe.*member;
        using F = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<F, std::string>)
          return v;
        else if constexpr (std::is_same_v<F, bool>)
          return v ? "true" : "false";
        else if constexpr (std::is_floating_point_v<F>) {
          char buf[32];  // the shortest text that reads back as v
          return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
        }
        else if constexpr (std::is_integral_v<F>)
          return std::to_string(v);
        else
          return "";
      },
      row.field);
}

void set_recipe_option(TrainingRecipe& recipe, const std::string& option, const std::string& value) {
  const RecipeOption& row = recipe_option(option);
  check_recipe_value(row, value);
  std::visit(
      [&](auto member) {
        auto& field = recipe.*member;
        using F = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<F, std::string>) {
          field = value;
        } else if constexpr (std::is_same_v<F, bool>) {
          field = value == "true";
        } else if constexpr (std::is_same_v<F, std::vector<std::string>>) {
          field.push_back(value);  // repeatable: each call adds one
        } else if constexpr (std::is_same_v<F, std::vector<int64_t>>) {
          field.push_back(std::stoll(value));
        } else {
          F v{};
          std::from_chars(value.data(), value.data() + value.size(), v);
          field = v;
        }
      },
      row.field);
  recipe.given.insert("--" + option);
}

}  // namespace lt
