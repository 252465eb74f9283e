// lt.h: training, evaluation and export through a recipe of lt-train's
// options; the run is the library's (train/training_run.h), as lt-train's is.
#include <atomic>
#include <string>

#include "api_internal.h"
#include "train/training_run.h"

using lt::api::caller_copy;
using lt::api::require;

struct lt_recipe {
  lt::TrainingRecipe recipe;
  // The run's command line as the checkpoint records it (lt.train.command):
  // "lt_train --task copy --steps 6 ...", the options in the order they were
  // set, so that a checkpoint says it came through the API and with what.
  std::string command;
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
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(result, "result");
    std::atomic<bool> stopping{stop && *stop};
    lt::TrainingRecipe run = recipe->recipe;
    run.command = recipe->command;
    const lt::TrainResult r = lt::run_training(run, &stopping, [&](const lt::TrainEvent& e) {
      if (progress) {
        const lt_train_event event{lt_train_event_kind(e.kind), e.step_index, e.loss,   e.accuracy, e.error_rate,
                                   e.lr, e.examples_per_s, e.epoch, e.path.c_str(), e.rows};
        progress(&event, user);
      }
      if (stop && *stop) stopping = true;  // read after every event, so a callback may set it
    });
    if (r.status == lt::TrainStatus::diverged) throw lt::Error(r.message);
    result->finished = r.status == lt::TrainStatus::finished;
    result->step = r.step;
    result->score = result->finished ? caller_string(r.score) : nullptr;
  });
}

lt_status lt_evaluate(const lt_recipe* recipe, char** out) {
  if (out) *out = nullptr;
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(out, "result");
    *out = caller_string(lt::evaluate_checkpoint(recipe->recipe));
  });
}

lt_status lt_export(const lt_recipe* recipe, char** report) {
  if (report) *report = nullptr;
  return lt::api::guarded([&] {
    require(recipe, "recipe");
    require(report, "report");
    *report = caller_string(lt::export_checkpoint(recipe->recipe));
  });
}

void lt_string_free(char* text) { std::free(text); }
