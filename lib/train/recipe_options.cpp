// set_recipe_option (lt/training_run.h): a TrainingRecipe field by lt-train's
// long flag name, for callers without a command line (lt.h's lt_recipe_set).
// A test holds this table to lt-train's --help.
#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include "lt/error.h"
#include "lt/training_run.h"

namespace lt {
namespace {

using Setter = std::function<void(TrainingRecipe&, const std::string& name, const std::string& value)>;

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

template <class T>
Setter field(T TrainingRecipe::*member) {
  return [member](TrainingRecipe& r, const std::string& name, const std::string& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      r.*member = value;
    } else if constexpr (std::is_same_v<T, bool>) {
      check(value == "true" || value == "false", name + ": '" + value + "' is not true or false");
      r.*member = value == "true";
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      (r.*member).push_back(value);  // repeatable: each call adds one
    } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      (r.*member).push_back(number<int64_t>(name, value));
    } else {
      r.*member = number<T>(name, value);
    }
  };
}

// A field with its allowed values or range, as lt-train checks them.
template <class T>
Setter ranged(T TrainingRecipe::*member, T lo, T hi) {
  return [member, lo, hi](TrainingRecipe& r, const std::string& name, const std::string& value) {
    const T v = number<T>(name, value);
    check(v >= lo && v <= hi, name + ": " + value + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    r.*member = v;
  };
}
Setter one_of(std::string TrainingRecipe::*member, std::vector<std::string> allowed) {
  return [member, allowed](TrainingRecipe& r, const std::string& name, const std::string& value) {
    std::string list;
    for (const std::string& a : allowed) {
      if (a == value) return void(r.*member = value);
      list += (list.empty() ? "" : ", ") + a;
    }
    throw Error(name + ": '" + value + "' is not one of " + list);
  };
}

const std::map<std::string, Setter>& setters() {
  using R = TrainingRecipe;
  static const std::map<std::string, Setter> table = {
      {"task", one_of(&R::task, {"image", "copy", "asr"})},
      {"data", field(&R::data)},
      {"model", field(&R::model)},
      {"output", field(&R::output)},
      {"init", field(&R::init)},
      {"resume", field(&R::resume)},
      {"preset", field(&R::preset)},
      {"layers", field(&R::layers)},
      {"d-model", field(&R::d_model)},
      {"heads", field(&R::heads)},
      {"ff-dim", field(&R::ff_dim)},
      {"ff-conv", field(&R::ff_conv)},
      {"mixtures", field(&R::mixtures)},
      {"attention", field(&R::attention)},
      {"feature-map", field(&R::feature_map)},
      {"features", ranged(&R::features, int64_t(0), int64_t(1) << 20)},
      {"feature-redraw", ranged(&R::feature_redraw, int64_t(0), int64_t(1) << 40)},
      {"output-head", field(&R::output_head)},
      {"dropout", field(&R::dropout)},
      {"optimizer", field(&R::optimizer)},
      {"lr", field(&R::lr)},
      {"schedule", field(&R::schedule)},
      {"milestones", field(&R::milestones)},
      {"gamma", field(&R::gamma)},
      {"warmup", field(&R::warmup)},
      {"min-lr", field(&R::min_lr)},
      {"clip", field(&R::clip)},
      {"batch", field(&R::batch)},
      {"micro-batch", field(&R::micro_batch)},
      {"memory-limit", field(&R::memory_limit)},
      {"steps", field(&R::steps)},
      {"epochs", field(&R::epochs)},
      {"seed", field(&R::seed)},
      {"plateau", field(&R::plateau)},
      {"valid", field(&R::valid)},
      {"lexicon", field(&R::lexicon)},
      {"encoder", field(&R::encoder)},
      {"frame-stack", ranged(&R::frame_stack, 1, 16)},
      {"context", ranged(&R::context, -1, 64)},
      {"future", ranged(&R::future, -1, 64)},
      {"max-frames", ranged(&R::max_frames, int64_t(1), int64_t(1) << 40)},
      {"spec-augment", field(&R::spec_augment)},
      {"vtlp", field(&R::vtlp)},
      {"speed", field(&R::speed)},
      {"reverb", field(&R::reverb)},
      {"noise", field(&R::noise)},
      {"telephone", field(&R::telephone)},
      {"codec", field(&R::codec)},
      {"clipping", field(&R::clipping)},
      {"beam", ranged(&R::beam, int64_t(1), int64_t(1024))},
      {"checkpoint-every", field(&R::checkpoint_every)},
      {"eval-every", field(&R::eval_every)},
      {"eval-images", field(&R::eval_images)},
      {"log", field(&R::log)},
      {"format", one_of(&R::format, {"text", "json"})},
      {"device", field(&R::device)},
      {"gpu-sum", field(&R::gpu_sum)},
      {"bf16", field(&R::bf16)},
      {"tf32", field(&R::tf32)},
      {"quiet", field(&R::quiet)},
      {"recurrent", field(&R::recurrent)},
      {"score", field(&R::score)},
      {"average", field(&R::average)},
      {"note", field(&R::notes)},
  };
  return table;
}

}  // namespace

void set_recipe_option(TrainingRecipe& recipe, const std::string& option, const std::string& value) {
  auto it = setters().find(option);
  check(it != setters().end(), "'" + option + "' is not an option of lt-train (its long flags, without the dashes)");
  it->second(recipe, "--" + option, value);
  recipe.given.insert("--" + option);
}

}  // namespace lt
