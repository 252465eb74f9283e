// lt-train's options, declared once: lt-train builds its command line from
// this table, and set_recipe_option (lt.h's lt_recipe_set) sets a recipe's
// field by the same names, through the same check (check_recipe_value), so a
// value one refuses the other refuses in the same words. A row is a flag's
// names, its --help group and text, the TrainingRecipe field it fills, and
// what values it takes: a range with the sentinels its help documents ("0:
// the preset's"), a list of choices, a path, a pattern.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "train/training_run.h"

namespace lt {

struct RecipeOption {
  using R = TrainingRecipe;
  using Field = std::variant<std::string R::*, bool R::*, int R::*, int64_t R::*, uint64_t R::*, float R::*,
                             double R::*, std::vector<std::string> R::*, std::vector<int64_t> R::*>;
  enum class Takes {
    flag,           // a bool field: true or false
    number,         // lo..hi (excluding lo with above, hi with below), or one of the sentinels
    choices,        // one of choices
    path,           // a non-empty path
    existing_file,  // a regular file that exists now
    attention,      // causal-linear, linear, softmax, lsh-N, or causal- before linear, softmax or lsh-N
    draw,           // a waveform augmentation: P or P:LO:HI (P in 0..1, LO <= HI)
    probability,    // P in 0..1
    note,           // KEY=TEXT
  };
  struct Sentinel {
    double value;
    std::string meaning;  // "the preset's"
  };

  std::string flags;  // CLI11's names: "-b,--batch"; the long one, without dashes, names the option
  std::string group;  // its --help group: "", "model", "optimization" or "speech"
  // Empty: a flag every tool shares (device, precision, quiet), whose text
  // lt-train takes from apps/common with the other tools'.
  std::string help;
  Field field;
  bool show_default = true;  // --help prints the field's default
  Takes takes = Takes::flag;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  bool above = false, below = false;  // lo and hi themselves are outside
  bool even = false;                  // an even number
  std::vector<Sentinel> sentinels;    // values outside lo..hi that mean something (a number)
  std::vector<std::string> choices;   // Takes::choices

  std::string name() const;  // "batch"
  bool whole() const;        // its field holds whole numbers
  // What it takes, for messages: "a whole number >= 1, or 0 (the preset's)".
  std::string takes_text() const;

  // For the table's rows: opt(...).no_default().at_least(1).or_value(0, "the preset's").
  RecipeOption& no_default() { return show_default = false, *this; }
  RecipeOption& at_least(double low) { return takes = Takes::number, lo = low, *this; }
  RecipeOption& more_than(double low) { return takes = Takes::number, lo = low, above = true, *this; }
  RecipeOption& less_than(double high) { return takes = Takes::number, hi = high, below = true, *this; }
  RecipeOption& range(double low, double high) { return takes = Takes::number, lo = low, hi = high, *this; }
  RecipeOption& even_only() { return even = true, *this; }
  RecipeOption& or_value(double v, std::string meaning) { return sentinels.push_back({v, std::move(meaning)}), *this; }
  RecipeOption& one_of(std::vector<std::string> allowed) { return takes = Takes::choices, choices = std::move(allowed), *this; }
  RecipeOption& path() { return takes = Takes::path, *this; }
  RecipeOption& existing_file() { return takes = Takes::existing_file, *this; }
  RecipeOption& as(Takes kind) { return takes = kind, *this; }
};

// Every option, in lt-train's --help order.
const std::vector<RecipeOption>& recipe_options();
// The row of a long flag's name ("batch"); an lt::Error naming it when there is none.
const RecipeOption& recipe_option(const std::string& name);

// Throws an lt::Error, one line naming the option, the value and what it
// takes ("--batch: '-4' is not a whole number >= 1, or 0 (the preset's)"),
// unless the row takes value (one value of a repeatable option).
void check_recipe_value(const RecipeOption& row, const std::string& value);

// The field's value as text, as --help shows it ("" for a repeatable option).
std::string recipe_value_text(const TrainingRecipe& recipe, const RecipeOption& row);

// --note's KEY=TEXT as (KEY, TEXT); an lt::Error naming it otherwise.
std::pair<std::string, std::string> split_note(const std::string& note);

}  // namespace lt
