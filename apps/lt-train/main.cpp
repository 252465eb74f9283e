// lt-train: trains the paper's models (pixel-by-pixel image models, the copy
// task, CTC phoneme recognition), evaluates checkpoints (--eval) and exports
// weights without the optimizer state (--export). The flags fill a
// TrainingRecipe, one flag per row of train/recipe_options.h, and the run is the
// library's (train/training_run.h). Results on
// stdout, progress on stderr.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <map>
#include <vector>
#include <variant>

#include "backend/device.h"
#include "command_line.h"
#include "common/error.h"
#include "common_options.h"
#include "core/precision_flags.h"
#include "process_setup.h"
#include "train/recipe_options.h"
#include "train/training_run.h"
#include "train/world.h"

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
// A row of train/recipe_options.h as a flag of app. Its text is kept as given
// and set after parsing through set_recipe_option, lt_recipe_set's check and
// words: a value either refuses is refused by both, with exit status 1. The
// flags every tool shares (device, precision) take the tools' common text.
struct GivenOption {
  const lt::RecipeOption* row = nullptr;
  CLI::Option* option = nullptr;  // null for --bf16 and --tf32, whose flags are shared
  std::string text;               // a single value
  std::vector<std::string> texts; // a repeatable option's values
  bool flag = false;              // a bool row
};

void add_recipe_option(CLI::App& app, GivenOption& g, const lt::TrainingRecipe& defaults, bool& bf16, bool& tf32) {
  const lt::RecipeOption& row = *g.row;
  using Takes = lt::RecipeOption::Takes;
  if (row.help.empty()) {
    if (row.name() == "device") g.option = lt::app::add_device_option(app, g.text = defaults.device);
    if (row.name() == "bf16") lt::app::add_precision_flags(app, bf16, tf32, lt::app::PrecisionUse::training);
    return;
  }
  std::visit(
      [&](auto member) {
        using F = std::decay_t<decltype(defaults.*member)>;
        if constexpr (std::is_same_v<F, bool>) {
          g.option = app.add_flag(row.flags, g.flag, row.help);
        } else {
          constexpr bool many = std::is_same_v<F, std::vector<std::string>> || std::is_same_v<F, std::vector<int64_t>>;
          if constexpr (many)
            g.option = app.add_option(row.flags, g.texts, row.help);
          else
            g.option = app.add_option(row.flags, g.text, row.help);
          std::string type = row.takes != Takes::number ? "TEXT" : std::is_unsigned_v<F> ? "UINT" : row.whole() ? "INT" : "FLOAT";
          if (row.takes == Takes::choices) {
            type += ":{";
            for (size_t i = 0; i < row.choices.size(); ++i) type += (i ? "," : "") + row.choices[i];
            type += "}";
          }
          g.option->type_name(type);
          if (row.show_default) g.option->default_str(lt::recipe_value_text(defaults, row));
        }
      },
      row.field);
}

// Sets each option given on the command line in a, through the table's checks.
void set_given_options(const std::vector<GivenOption>& given, bool bf16, bool tf32, lt::TrainingRecipe& a) {
  for (const GivenOption& g : given) {
    const std::string name = g.row->name();
    if (name == "bf16" || name == "tf32") {
      if (name == "bf16" ? bf16 : tf32) lt::set_recipe_option(a, name, "true");
      continue;
    }
    if (!g.option || g.option->count() == 0) continue;
    if (g.row->takes == lt::RecipeOption::Takes::flag)
      lt::set_recipe_option(a, name, g.flag ? "true" : "false");
    else if (!g.texts.empty())
      for (const std::string& t : g.texts) lt::set_recipe_option(a, name, t);
    else
      lt::set_recipe_option(a, name, g.text);
  }
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
  std::map<std::string, CLI::App*> groups = {{"", &app},
                                             {"model", app.add_option_group("model", "model (0 or empty: the preset's value)")},
                                             {"optimization", app.add_option_group("optimization")},
                                             {"speech", app.add_option_group("speech", "--task asr")}};
  std::vector<GivenOption> given(lt::recipe_options().size());
  bool bf16 = false, tf32 = false;
  for (size_t i = 0; i < given.size(); ++i) {
    given[i].row = &lt::recipe_options()[i];
    add_recipe_option(*groups.at(given[i].row->group), given[i], a, bf16, tf32);
  }
  lt::app::add_threads_option(app, threads);

  if (const int status = lt::app::parse_command_line(app, argc, argv, "lt-train"); status >= 0) return status;
  for (int i = 0; i < argc; ++i) a.command += (i ? " " : "") + std::string(argv[i]);
  try {
    set_given_options(given, bf16, tf32, a);
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
