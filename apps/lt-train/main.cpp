// lt-train: trains the paper's models (pixel-by-pixel image models, the copy
// task, CTC phoneme recognition), evaluates checkpoints (--eval) and exports
// weights without the optimizer state (--export). A short main over lt.h:
// the flags are lt-train's option table (lt_recipe_option_at), each one given
// set on a recipe with lt_recipe_set, and the run is lt_train, lt_evaluate or
// lt_export. Results on stdout, progress on stderr.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "command_line.h"
#include "common_options.h"
#include "lt.hpp"
#include "process_setup.h"

namespace {
volatile int g_stop = 0;  // lt_train's stop flag
extern "C" void on_sigint(int) {
  g_stop = 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills at once
}

// A row of lt-train's option table as a flag of app. Its text is kept as
// given and set after parsing through lt_recipe_set, whose checks and words
// are the table's: a value it refuses is refused with exit status 1. The
// flags every tool shares (device, precision) take the tools' common text.
struct GivenOption {
  lt_recipe_option row{};
  CLI::Option* option = nullptr;  // null for --bf16 and --tf32, whose flags are shared
  std::string text;               // a single value
  std::vector<std::string> texts; // a repeatable option's values
  bool flag = false;              // a flag's
};

void add_recipe_option(CLI::App& app, GivenOption& g, const lt_recipe* defaults, bool& bf16, bool& tf32) {
  const lt_recipe_option& row = g.row;
  const std::string name = row.name;
  if (*row.help == '\0') {
    if (name == "device") g.option = lt::app::add_device_option(app, g.text = lt::api::recipe_value(defaults, name));
    if (name == "bf16") lt::app::add_precision_flags(app, bf16, tf32, lt::app::PrecisionUse::training);
    return;
  }
  if (row.flag) {
    g.option = app.add_flag(row.flags, g.flag, row.help);
    return;
  }
  g.option = row.repeatable ? app.add_option(row.flags, g.texts, row.help) : app.add_option(row.flags, g.text, row.help);
  g.option->type_name(row.type);
  if (row.shows_default) g.option->default_str(lt::api::recipe_value(defaults, name));
}

// Sets each option given on the command line in the recipe, in the table's order.
void set_given_options(const std::vector<GivenOption>& given, bool bf16, bool tf32, lt_recipe* recipe) {
  for (const GivenOption& g : given) {
    const std::string name = g.row.name;
    if (name == "bf16" || name == "tf32") {
      if (name == "bf16" ? bf16 : tf32) lt::api::ok(lt_recipe_set(recipe, g.row.name, "true"));
      continue;
    }
    if (!g.option || g.option->count() == 0) continue;
    if (g.row.flag)
      lt::api::ok(lt_recipe_set(recipe, g.row.name, g.flag ? "true" : "false"));
    else if (!g.texts.empty())
      for (const std::string& t : g.texts) lt::api::ok(lt_recipe_set(recipe, g.row.name, t.c_str()));
    else
      lt::api::ok(lt_recipe_set(recipe, g.row.name, g.text.c_str()));
  }
}

// The world of the run; a world of one when MPI could not start (the run
// itself then says why).
lt_world world() {
  lt_world w{0, 1, 0};
  lt_world_get(&w);
  return w;
}

int run(lt_recipe* recipe, bool eval, bool export_) {
  if (eval || export_) {  // their output on stdout
    char* text = nullptr;
    lt::api::ok(eval ? lt_evaluate(recipe, &text) : lt_export(recipe, &text));
    const lt::api::String kept(text);
    std::fputs(text, stdout);
    return 0;
  }
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  lt_train_result r{};
  const lt_status status = lt_train(recipe, nullptr, nullptr, &g_stop, &r);
  const lt::api::String score(r.score);
  if (status == LT_ERROR_DIVERGED) {  // every rank at the same step: rank 0 says so
    if (world().rank == 0) std::fprintf(stderr, "lt-train: %s\n", lt_last_error());
    return 1;
  }
  lt::api::ok(status);
  if (!r.finished) {
    if (world().rank == 0)
      std::fprintf(stderr, "lt-train: interrupted at step %lld; checkpoint written to %s (continue with --resume)\n",
                   (long long)r.step, lt::api::recipe_value(recipe, "output").c_str());
    return 130;
  }
  if (world().rank == 0) std::printf("%s\n", r.score);
  return 0;
}
}  // namespace

// training: a few large parallel regions, on all cores even when others run
LT_BEFORE_LIBRARIES(lt::app::setup_process<lt::app::UnderLoad::all_cores>);

int main(int argc, char** argv) {
  bool eval = false, export_ = false;
  int threads = 0;
  CLI::App app{"lt-train: train linear-transformer models (image generation, copy task, speech recognition) and evaluate them"};
  app.set_help_flag("-h,--help", "show every option with its default");

  auto* modes = app.add_option_group("mode", "what to do (default: train)");
  modes->add_flag("--eval", eval, "evaluate -m CKPT on the test split of --data: bits/dim (copy: accuracy; speech: PER on --data)");
  modes->add_flag("--export", export_, "write -m CKPT without optimizer state to -o, with its test bits/dim (images: of --data; speech: PER of each --score manifest)");
  std::map<std::string, CLI::App*> groups = {{"", &app},
                                             {"model", app.add_option_group("model", "model (0 or empty: the preset's value)")},
                                             {"optimization", app.add_option_group("optimization")},
                                             {"speech", app.add_option_group("speech", "--task asr")}};
  lt::api::Recipe recipe;  // the run: the task's default, then the options given, in the table's order
  std::vector<GivenOption> given(static_cast<size_t>(lt_recipe_option_count()));
  bool bf16 = false, tf32 = false;
  try {
    recipe = lt::api::new_recipe("image");
    for (size_t i = 0; i < given.size(); ++i) {
      lt::api::ok(lt_recipe_option_at(int64_t(i), &given[i].row));
      add_recipe_option(*groups.at(given[i].row.group), given[i], recipe.get(), bf16, tf32);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lt-train: %s\n", e.what());
    return 1;
  }
  lt::app::add_threads_option(app, threads);

  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-train"); status >= 0) return status;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  try {
    set_given_options(given, bf16, tf32, recipe.get());
    lt::api::ok(lt_recipe_set_caller(recipe.get(), "lt-train", command.c_str()));
    lt_set_threads(threads);
    return run(recipe.get(), eval, export_);
  } catch (const std::exception& e) {
    // A rank that fails alone ends them all: the others wait in a collective.
    const lt_world w = world();
    std::fprintf(stderr, "lt-train: %s%s\n",
                 w.size > 1 ? ("rank " + std::to_string(w.rank) + " of " + std::to_string(w.size) + ": ").c_str() : "",
                 e.what());
    if (w.size > 1) lt_world_abort(1);
    return 1;
  }
}
