// lt.h: training, evaluation and export through a recipe of lt-train's
// options; the run is the library's (train/training_run.h), as lt-train's is.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "api_internal.h"
#include "core/precision_flags.h"
#include "train/recipe_options.h"
#include "train/training_run.h"
#include "train/world.h"

using lt::api::caller_copy;
using lt::api::require;

struct lt_recipe {
  lt::TrainingRecipe recipe;
  // The run's command line as the checkpoint records it (lt.train.command):
  // "lt_train --task copy --steps 6 ...", the options in the order they were
  // set, so that a checkpoint says it came through the API and with what.
  std::string command;
  // lt_recipe_set_caller's command line, which then replaces it.
  std::string caller_command;
};

static_assert(int(lt::TrainEvent::step) == LT_TRAIN_STEP && int(lt::TrainEvent::eval) == LT_TRAIN_EVAL &&
              int(lt::TrainEvent::checkpoint) == LT_TRAIN_CHECKPOINT &&
              int(lt::TrainEvent::micro_batch) == LT_TRAIN_MICRO_BATCH);

namespace {
char* caller_string(const std::string& text) { return caller_copy(text.c_str(), text.size() + 1); }

// An option's value as a shell word: quoted when it holds more than [A-Za-z0-9_./:=,+-].
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                             "0123456789_./:=,+-") == std::string::npos;
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}
// What lt-train checks before anything is read or a device opened: the
// device's name, and whether the precision flags apply to it; --eval and
// --export run in one process.
void check_before_device(const lt::TrainingRecipe& r, bool one_process) {
  const lt::Device device = lt::parse_device(r.device);
  if (r.recurrent)
    lt::generation_precision(r.bf16, r.tf32, device);
  else
    lt::training_precision(r.bf16, r.tf32, device);
  lt::check(!one_process || lt::World::get().size() == 1,
            "--eval and --export run in one process: start them without mpirun");
}
}  // namespace

lt_status lt_recipe_new(const char* task, lt_recipe** recipe) {
  if (recipe) *recipe = nullptr;
  return lt::api::guarded([&] {
    require(task, "task");
    require(recipe, "recipe");
    auto r = std::make_unique<lt_recipe>();
    r->recipe.name = "lt";
    lt::set_recipe_option(r->recipe, "task", task);
    r->command = "lt_train --task " + shell_word(task);
    *recipe = r.release();
  });
}

lt_status lt_recipe_set(lt_recipe* recipe, const char* option, const char* value) {
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(option, "option");
    require(value, "value");
    lt::set_recipe_option(recipe->recipe, option, value);
    recipe->command += std::string(" --") + option + " " + shell_word(value);
  });
}

void lt_recipe_free(lt_recipe* recipe) { delete recipe; }

lt_status lt_train(const lt_recipe* recipe, lt_train_progress progress, void* user, const volatile int* stop,
                   lt_train_result* result) {
  if (result) *result = lt_train_result{0, 0, nullptr};
  bool diverged = false;
  const lt_status status = lt::api::guarded([&] {
    require(recipe, "recipe");
    require(result, "result");
    check_before_device(recipe->recipe, false);
    std::atomic<bool> stopping{stop && *stop};
    // The flag is also read every 10 ms, so that one set from a signal
    // handler while the run loads its data stops it before its first step.
    std::atomic<bool> ended{false};
    std::thread watcher;
    if (stop)
      watcher = std::thread([&] {
        for (; !ended; std::this_thread::sleep_for(std::chrono::milliseconds(10)))
          if (*stop) stopping = true;
      });
    struct Join {
      std::atomic<bool>& ended;
      std::thread& watcher;
      ~Join() {
        ended = true;
        if (watcher.joinable()) watcher.join();
      }
    } join{ended, watcher};
    lt::TrainingRecipe run = recipe->recipe;
    run.command = recipe->caller_command.empty() ? recipe->command : recipe->caller_command;
    const lt::TrainResult r = lt::run_training(run, &stopping, [&](const lt::TrainEvent& e) {
      if (progress) {
        const lt_train_event event{lt_train_event_kind(e.kind), e.step_index, e.loss,   e.accuracy, e.error_rate,
                                   e.lr, e.examples_per_s, e.epoch, e.path.c_str(), e.rows};
        progress(&event, user);
      }
      if (stop && *stop) stopping = true;  // read after every event, so a callback may set it
    });
    result->step = r.step;
    if (r.status == lt::TrainStatus::diverged) {
      diverged = true;
      throw lt::Error(r.message);
    }
    result->finished = r.status == lt::TrainStatus::finished;
    result->score = result->finished ? caller_string(r.score) : nullptr;
  });
  return diverged ? LT_ERROR_DIVERGED : status;
}

lt_status lt_evaluate(const lt_recipe* recipe, char** out) {
  if (out) *out = nullptr;
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(out, "result");
    check_before_device(recipe->recipe, true);
    *out = caller_string(lt::evaluate_checkpoint(recipe->recipe));
  });
}

lt_status lt_export(const lt_recipe* recipe, char** report) {
  if (report) *report = nullptr;
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(report, "report");
    check_before_device(recipe->recipe, true);
    *report = caller_string(lt::export_checkpoint(recipe->recipe));
  });
}

void lt_string_free(char* text) { std::free(text); }

// ---- lt-train's flags: the option table, a recipe's values, its caller ----

namespace {
// Whether the row's field holds F (for the fields of a repeatable option:
// a vector of F).
template <class... F>
bool holds(const lt::RecipeOption& row) {
  return std::visit(
      [](auto member) {
        using Field = std::decay_t<decltype(std::declval<lt::TrainingRecipe&>().*member)>;
        return (std::is_same_v<Field, F> || ...);
      },
      row.field);
}

// What --help shows an option takes: "INT", "UINT", "FLOAT", "TEXT" or
// "TEXT:{a,b}" (choices); "" for a flag.
std::string type_text(const lt::RecipeOption& row) {
  using Takes = lt::RecipeOption::Takes;
  if (holds<bool>(row)) return "";
  const bool is_unsigned = holds<uint64_t>(row);
  std::string type = row.takes != Takes::number ? "TEXT" : is_unsigned ? "UINT" : row.whole() ? "INT" : "FLOAT";
  if (row.takes == Takes::choices) {
    type += ":{";
    for (size_t i = 0; i < row.choices.size(); ++i) type += (i ? "," : "") + row.choices[i];
    type += "}";
  }
  return type;
}

// The table's rows as lt.h hands them out, made once (their texts live as long as the process).
struct OptionRows {
  std::vector<std::string> names, types;
  std::vector<lt_recipe_option> rows;
  OptionRows() {
    const std::vector<lt::RecipeOption>& table = lt::recipe_options();
    for (const lt::RecipeOption& row : table) names.push_back(row.name()), types.push_back(type_text(row));
    for (size_t i = 0; i < table.size(); ++i) {
      const lt::RecipeOption& row = table[i];
      const bool many = holds<std::vector<std::string>, std::vector<int64_t>>(row);
      rows.push_back(lt_recipe_option{names[i].c_str(), row.flags.c_str(), row.group.c_str(), row.help.c_str(),
                                      types[i].c_str(), holds<bool>(row) ? 1 : 0, many ? 1 : 0,
                                      row.show_default ? 1 : 0});
    }
  }
};
const OptionRows& option_rows() {
  static const OptionRows rows;
  return rows;
}
}  // namespace

int64_t lt_recipe_option_count(void) { return int64_t(lt::recipe_options().size()); }

lt_status lt_recipe_option_at(int64_t i, lt_recipe_option* option) {
  return lt::api::guarded([&] {
    require(option, "option");
    const std::vector<lt_recipe_option>& rows = option_rows().rows;
    if (i < 0 || i >= int64_t(rows.size()))
      throw lt::api::ArgumentError("lt_recipe_option_at: option " + std::to_string(i) + " of " +
                                   std::to_string(rows.size()));
    *option = rows[size_t(i)];
  });
}

lt_status lt_recipe_get(const lt_recipe* recipe, const char* option, char** value) {
  if (value) *value = nullptr;
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(option, "option");
    require(value, "value");
    *value = caller_string(lt::recipe_value_text(recipe->recipe, lt::recipe_option(option)));
  });
}

lt_status lt_recipe_set_caller(lt_recipe* recipe, const char* program, const char* command_line) {
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    if (program) {
      if (*program == '\0') throw lt::api::ArgumentError("lt_recipe_set_caller: the program's name is empty");
      recipe->recipe.name = program;
    }
    if (command_line) recipe->caller_command = recipe->recipe.command = command_line;
  });
}
