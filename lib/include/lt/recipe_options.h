// lt-train's options, declared once: lt-train builds its command line from
// this table, and set_recipe_option (lt.h's lt_recipe_set) sets a recipe's
// field by the same names, with the same checks. A row is a flag's names, its
// --help group and text, the TrainingRecipe field it fills, and what values
// it takes.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "lt/training_run.h"

namespace lt {

struct RecipeOption {
  using R = TrainingRecipe;
  using Field = std::variant<std::string R::*, bool R::*, int R::*, int64_t R::*, uint64_t R::*, float R::*,
                             double R::*, std::vector<std::string> R::*, std::vector<int64_t> R::*>;
  enum class Takes { any, non_negative, positive, range, choices, existing_file };

  std::string flags;  // CLI11's names: "-b,--batch"; the long one, without dashes, names the option
  std::string group;  // its --help group: "", "model", "optimization" or "speech"
  // Empty: a flag every tool shares (device, precision, quiet), whose text
  // lt-train takes from apps/common with the other tools'.
  std::string help;
  Field field;
  bool show_default = true;  // --help prints the field's default
  Takes takes = Takes::any;
  double lo = 0, hi = 0;             // Takes::range
  std::vector<std::string> choices;  // Takes::choices

  std::string name() const;  // "batch"

  // For the table's rows: opt(...).no_default().range(1, 16).
  RecipeOption& no_default() { return show_default = false, *this; }
  RecipeOption& non_negative() { return takes = Takes::non_negative, *this; }
  RecipeOption& positive() { return takes = Takes::positive, *this; }
  RecipeOption& range(double low, double high) { return takes = Takes::range, lo = low, hi = high, *this; }
  RecipeOption& one_of(std::vector<std::string> allowed) { return takes = Takes::choices, choices = std::move(allowed), *this; }
  RecipeOption& existing_file() { return takes = Takes::existing_file, *this; }
};

// Every option, in lt-train's --help order.
const std::vector<RecipeOption>& recipe_options();

}  // namespace lt
