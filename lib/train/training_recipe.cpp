// The training recipe in checkpoints: written as lt.train.* metadata, read
// back on resume for every option not given again; and the options over a
// family's architecture, which a resumed checkpoint's model must match.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "task_family.h"

namespace lt {

Schedule TrainingRecipe::make_schedule(float base_lr, int64_t total_steps) const {
  Schedule s;
  s.kind = parse_schedule_kind(schedule);
  s.lr = lr > 0 ? lr : base_lr;
  s.warmup_steps = warmup;
  s.milestones = milestones;
  s.gamma = gamma;
  s.total_steps = total_steps;
  s.min_lr = min_lr;
  return s;
}

std::string exact(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

namespace {
float parse_float(const Checkpoint& ck, const std::string& key) {
  const std::string v = ck.meta(key);
  char* end = nullptr;
  float f = std::strtof(v.c_str(), &end);
  check(!v.empty() && end == v.c_str() + v.size(), ck.path + ": metadata '" + key + "' is '" + v + "', not a number");
  return f;
}
}  // namespace

std::map<std::string, std::string> recipe_metadata(const TrainingRecipe& a, const Schedule& s, int64_t batch,
                                                   int64_t steps) {
  std::string milestones;
  for (int64_t m : s.milestones) milestones += (milestones.empty() ? "" : ",") + std::to_string(m);
  std::map<std::string, std::string> meta = {{"lt.train.batch", std::to_string(batch)},
                                              {"lt.train.steps", std::to_string(steps)},
                                              {"lt.train.lr", exact(s.lr)},
                                              {"lt.train.schedule", a.schedule},
                                              {"lt.train.warmup", std::to_string(s.warmup_steps)},
                                              {"lt.train.milestones", milestones},
                                              {"lt.train.gamma", exact(s.gamma)},
                                              {"lt.train.min_lr", exact(s.min_lr)},
                                              {"lt.train.clip", exact(a.clip)},
                                              {"lt.train.feature_redraw", std::to_string(a.feature_redraw)},
                                              {"lt.train.eval_every", std::to_string(a.eval_every)},
                                              {"lt.train.checkpoint_every", std::to_string(a.checkpoint_every)},
                                              {"lt.train.precision", a.bf16 ? "bf16" : "fp32"},
                                              {"lt.train.command", a.command}};
  if (!a.resumed_with.empty()) meta["lt.train.resumed_with"] = a.resumed_with;
  return meta;
}

void TrainingRecipe::adopt(const Checkpoint& ck) {
  auto adopt = [&](const char* option, const char* key) {
    return !given.count(option) && ck.metadata.count(std::string("lt.train.") + key);
  };
  if (adopt("--seed", "seed")) seed = std::stoull(ck.meta("lt.train.seed"));
  if (adopt("--batch", "batch")) batch = ck.meta_int("lt.train.batch");
  if (!given.count("--epochs") && adopt("--steps", "steps")) steps = ck.meta_int("lt.train.steps");
  if (adopt("--optimizer", "optimizer")) optimizer = ck.meta("lt.train.optimizer");
  if (adopt("--lr", "lr")) lr = parse_float(ck, "lt.train.lr");
  if (adopt("--schedule", "schedule")) schedule = ck.meta("lt.train.schedule");
  if (adopt("--warmup", "warmup")) warmup = ck.meta_int("lt.train.warmup");
  if (adopt("--gamma", "gamma")) gamma = parse_float(ck, "lt.train.gamma");
  if (adopt("--min-lr", "min_lr")) min_lr = parse_float(ck, "lt.train.min_lr");
  if (adopt("--clip", "clip")) clip = parse_float(ck, "lt.train.clip");
  if (adopt("--feature-redraw", "feature_redraw")) feature_redraw = ck.meta_int("lt.train.feature_redraw");
  if (adopt("--plateau", "plateau")) plateau = int(ck.meta_int("lt.train.plateau"));
  if (adopt("--eval-every", "eval_every")) eval_every = ck.meta_int("lt.train.eval_every");
  if (adopt("--checkpoint-every", "checkpoint_every")) checkpoint_every = ck.meta_int("lt.train.checkpoint_every");
  if (device == "cpu" && ck.meta("lt.train.precision", "fp32") == "bf16") bf16 = true;  // a bf16 run stays one
  // The speech task's data recipe (its model and front end come with the checkpoint).
  if (!given.count("--spec-augment") && ck.metadata.count("speech.spec_augment"))
    spec_augment = ck.meta("speech.spec_augment") == "1";
  if (!given.count("--vtlp") && ck.metadata.count("speech.vtlp")) vtlp = parse_float(ck, "speech.vtlp");
  for (auto [flag, field] : {std::pair{"--speed", &speed}, {"--reverb", &reverb}, {"--noise", &noise},
                             {"--telephone", &telephone}, {"--codec", &codec}, {"--clipping", &clipping}}) {
    const std::string key = std::string("speech.") + (flag + 2);
    if (!given.count(flag) && ck.metadata.count(key)) *field = ck.meta(key);
  }
  if (!given.count("--max-frames") && ck.metadata.count("speech.max_frames"))
    max_frames = ck.meta_int("speech.max_frames");
  if (ck.metadata.count("lt.train.command")) {
    const std::string earlier = ck.meta("lt.train.resumed_with", "");
    resumed_with = earlier.empty() ? command : earlier + "; " + command;
    command = ck.meta("lt.train.command");
  }
  if (adopt("--milestones", "milestones")) {
    milestones.clear();
    const std::string m = ck.meta("lt.train.milestones");
    for (size_t pos = 0; pos < m.size();) {
      size_t comma = std::min(m.find(',', pos), m.size());
      milestones.push_back(std::stoll(m.substr(pos, comma - pos)));
      pos = comma + 1;
    }
  }
}

void apply_transformer_options(const TrainingRecipe& a, TransformerConfig& t) {
  if (a.layers > 0) t.layers = a.layers;
  if (a.heads > 0) t.heads = a.heads;
  if (a.d_model > 0) t.d_model = a.d_model, t.ff_dim = 4 * a.d_model;
  check(t.d_model % t.heads == 0, "--d-model " + std::to_string(t.d_model) + " is not a multiple of --heads " +
                                      std::to_string(t.heads));
  t.head_dim = t.d_model / t.heads;
  if (a.ff_dim > 0) t.ff_dim = a.ff_dim;
  t.set_attention(a.attention);
  t.feature_map = a.feature_map;
  t.ff_conv = a.ff_conv;
  t.features = a.features;
  if (a.dropout >= 0) t.dropout = a.dropout;
}

std::vector<ArchitectureField> transformer_fields(const TransformerConfig& want, const TransformerConfig& have) {
  using std::to_string;
  return {{"--layers", to_string(want.layers), to_string(have.layers)},
          {"--d-model", to_string(want.d_model), to_string(have.d_model)},
          {"--heads", to_string(want.heads), to_string(have.heads)},
          {"--ff-dim", to_string(want.ff_dim), to_string(have.ff_dim)},
          {"--ff-conv", to_string(want.ff_conv), to_string(have.ff_conv)},
          {"--attention", attention_name(want), attention_name(have)},
          {"--feature-map", want.feature_map, have.feature_map},
          // 0 asks for the map's default width, whatever it is
          {"--features", to_string(want.features ? want.features : have.features), to_string(have.features)}};
}

void refuse_architecture_with_init(const TrainingRecipe& a, std::initializer_list<const char*> extra) {
  auto refuse = [&](const char* flag) {
    check(!a.given.count(flag), std::string(flag) + " cannot be combined with --init: the architecture comes from " + a.init);
  };
  for (const char* flag : kArchitectureOptions) refuse(flag);
  for (const char* flag : extra) refuse(flag);
}

void check_resumed_architecture(const TrainingRecipe& a, const std::vector<ArchitectureField>& fields,
                                const std::string& path) {
  const bool preset = a.given.count("--preset") > 0;
  for (const ArchitectureField& f : fields)
    if ((preset || a.given.count(f.flag)) && f.want != f.have)
      throw Error(path + ": its model has " + f.flag + " " + f.have + ", the command line asks for " + f.want +
                  (a.given.count(f.flag) ? "" : " (--preset " + a.preset + ")") +
                  "; --resume keeps the checkpoint's architecture");
}

}  // namespace lt
