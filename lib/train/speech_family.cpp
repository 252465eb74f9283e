// The speech task (paper section 4.3) as a task family: CTC phoneme
// recognition from a manifest or a LibriSpeech folder, the paper's encoder
// or its Bi-LSTM baseline, scored by phone error rate overall and per speaker.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/device.h"
#include "common/error.h"
#include "core/precision_flags.h"
#include "task_family.h"
#include "train/speech_training.h"

namespace lt {

namespace {

double hours(const std::vector<std::vector<float>>& raw, const SpeechFrontEnd& f) {
  double frames = 0;
  for (const auto& r : raw) frames += double(r.size()) / f.fbank_config().bins;
  return frames * f.fbank_config().hop_ms / 1000.0 / 3600.0;
}

// Reads and featurises a split, saying on stderr what it kept.
SpeechSet load_split(const std::string& name, const std::string& path, const TrainingRecipe& a, SpeechFrontEnd& frontend,
                     int64_t max_positions, bool fit_statistics) {
  const auto t0 = std::chrono::steady_clock::now();
  check(!path.empty(), "--task asr needs --data MANIFEST.tsv or a LibriSpeech folder");
  const std::vector<Utterance> utts = read_corpus(path, a.lexicon);
  const std::vector<std::vector<float>> raw = compute_filterbanks(utts, frontend);
  if (fit_statistics) frontend.set_statistics(filterbank_statistics(raw, frontend.fbank_config().bins));
  SpeechSetReport report;
  SpeechSet set = make_speech_set(utts, raw, frontend, max_positions, &report);
  if (!a.quiet)
    std::fprintf(stderr,
                 "%s: %s: %lld utterances, %.2f h of audio from %s in %.1f s; left out %lld too short for "
                 "their phones, %lld over %lld positions, %lld without phones\n",
                 a.name.c_str(), name.c_str(), (long long)set.size(), hours(raw, frontend), path.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 (long long)report.too_short, (long long)report.too_long, (long long)max_positions,
                 (long long)report.no_phones);
  return set;
}

// The waveform augmentations the flags ask for, over each one's default range.
WaveAugmentation wave_augmentation(const TrainingRecipe& a) {
  WaveAugmentation w;
  w.speed = parse_wave_draw("--speed", a.speed, w.speed);
  w.reverb = parse_wave_draw("--reverb", a.reverb, w.reverb);
  w.noise = parse_wave_draw("--noise", a.noise, w.noise);
  w.telephone = parse_wave_draw("--telephone", a.telephone, w.telephone);
  w.codec = parse_wave_draw("--codec", a.codec, w.codec);
  w.clip = parse_wave_draw("--clipping", a.clipping, w.clip);
  check(w.speed.lo >= 0.5 && w.speed.hi <= 2, "--speed: factors outside 0.5 .. 2");
  check(w.reverb.lo >= 0.05 && w.reverb.hi <= 3, "--reverb: reverberation times outside 0.05 .. 3 s");
  check(w.clip.lo >= 0 && w.clip.hi <= 60, "--clipping: gains outside 0 .. 60 dB");
  return w;
}

// Whether --attention asks for a causal model (causal-*, the streaming model).
bool asks_causal(const TrainingRecipe& a) {
  return a.given.count("--attention") && a.attention.rfind("causal-", 0) == 0;
}

// The paper's encoder: 9 layers, 6 heads of 32, bidirectional linear attention.
TransformerConfig asr_transformer(const TrainingRecipe& a) {
  TransformerConfig t;
  t.layers = a.layers > 0 ? a.layers : 9;
  t.heads = a.heads > 0 ? a.heads : 6;
  t.d_model = a.d_model > 0 ? a.d_model : 192;
  check(t.d_model % t.heads == 0, "--d-model " + std::to_string(t.d_model) + " is not a multiple of --heads " +
                                      std::to_string(t.heads));
  t.head_dim = t.d_model / t.heads;
  t.ff_dim = a.ff_dim > 0 ? a.ff_dim : 4 * t.d_model;
  // linear and softmax look at the whole utterance; causal-* is the streaming model.
  const std::string name = a.given.count("--attention") ? a.attention : "linear";
  const bool causal = asks_causal(a);
  t.set_attention(causal ? name.substr(7) : name);
  t.direction = causal ? Direction::causal : Direction::bidirectional;
  t.feature_map = a.feature_map;
  t.ff_conv = a.ff_conv;
  t.features = a.features;
  t.dropout = a.dropout >= 0 ? a.dropout : 0.1f;
  return t;
}

// The paper's Bi-LSTM baseline (Table 3): 3 layers, 320 hidden units per direction.
LstmConfig asr_bilstm(const TrainingRecipe& a) {
  LstmConfig l;
  l.layers = a.layers > 0 ? a.layers : 3;
  l.hidden = a.d_model > 0 ? a.d_model : 320;
  l.dropout = a.dropout >= 0 ? a.dropout : 0.1f;
  return l;
}

SequenceModelConfig asr_model_config(const TrainingRecipe& a, int64_t features, int64_t max_positions) {
  return a.encoder == "bilstm" ? speech_model_config(asr_bilstm(a), features, kPhoneClasses, max_positions)
                               : speech_model_config(asr_transformer(a), features, kPhoneClasses, max_positions);
}

// The frames of one encoder position: 8 frames of context on each side for
// a transformer, whose attention cannot look at a position's neighbours
// (docs/speech.md, "Context frames"); a causal model's context is before it
// unless --future asks for more (a stream waits for those frames).
FrameWindow frame_window(const TrainingRecipe& a) {
  const bool bilstm = a.encoder == "bilstm";
  const bool causal = !bilstm && asks_causal(a);
  const int past = a.context >= 0 ? a.context : bilstm ? 0 : 8;
  return FrameWindow{a.frame_stack, past, a.future >= 0 ? a.future : causal ? 0 : past};
}

// What the command line asks of a resumed model: its encoder first, then that encoder's sizes
// and the frames of a position. An encoder not given is the checkpoint's.
std::vector<ArchitectureField> asr_fields(const TrainingRecipe& a, const SequenceModelConfig& have,
                                          const FrameWindow& have_window) {
  TrainingRecipe asked = a;
  if (!a.given.count("--encoder")) asked.encoder = encoder_kind_name(have.encoder);
  const SequenceModelConfig want = asr_model_config(asked, have.input_features, have.max_positions);
  std::vector<ArchitectureField> fields = {
      {"--encoder", encoder_kind_name(want.encoder), encoder_kind_name(have.encoder)}};
  if (want.encoder == EncoderKind::bilstm) {
    fields.push_back({"--layers", std::to_string(want.lstm.layers), std::to_string(have.lstm.layers)});
    fields.push_back({"--d-model", std::to_string(want.lstm.hidden), std::to_string(have.lstm.hidden)});
  } else {
    for (const ArchitectureField& f : transformer_fields(want.transformer, have.transformer)) fields.push_back(f);
  }
  const FrameWindow window = frame_window(asked);
  fields.push_back({"--frame-stack", std::to_string(window.stack), std::to_string(have_window.stack)});
  fields.push_back({"--context", std::to_string(window.past), std::to_string(have_window.past)});
  fields.push_back({"--future", std::to_string(window.future), std::to_string(have_window.future)});
  return fields;
}

int64_t max_positions_of(const TrainingRecipe& a) { return (a.max_frames + a.frame_stack - 1) / a.frame_stack; }

nlohmann::json counts_json(const ErrorCounts& c) {
  return {{"per", c.rate()}, {"errors", c.errors}, {"phones", c.reference}, {"substitutions", c.substitutions},
          {"deletions", c.deletions}, {"insertions", c.insertions}};
}

// PER of a manifest under --beam, --batch, --bf16/--tf32; left_out counts the
// utterances it could not score (too short for their phones, too long, none).
SpeechScore score_manifest(const TrainingRecipe& a, SequenceModel& model, const SpeechFrontEnd& frontend,
                           const std::string& manifest, int64_t& left_out) {
  const std::vector<Utterance> utts = read_corpus(manifest, a.lexicon);
  SpeechSetReport report;
  const SpeechSet set = make_speech_set(utts, compute_filterbanks(utts, frontend), frontend,
                                        model.config().max_positions, &report);
  ForwardOptions options;
  options.precision = training_precision(a.bf16, a.tf32, model.device());
  CtcBeamOptions beam;
  beam.beam = int(a.beam);
  left_out = report.too_short + report.too_long + report.no_phones;
  return score_speech(model, set, a.batch > 0 ? a.batch : 16, options, beam);
}

class SpeechFamily final : public TaskFamily {
 public:
  SequenceModel& resume(const std::string& path, const TrainingRecipe& a, Device d) override {
    SpeechModel m = load_speech_model(path, d);
    check_resumed_architecture(a, asr_fields(a, m.model->config(), m.frontend.window()), path);
    model_ = std::move(m.model);
    frontend_ = m.frontend;
    load_data(a, false);
    return *model_;
  }
  SequenceModel& start(const TrainingRecipe& a, Device d) override {
    if (!a.init.empty()) {  // its architecture, front end and statistics; a fresh optimizer
      refuse_architecture_with_init(a, {"--encoder", "--frame-stack", "--context", "--future"});
      SpeechModel m = load_speech_model(a.init, d);
      model_ = std::move(m.model);
      frontend_ = m.frontend;
      load_data(a, false);
      return *model_;
    }
    frontend_ = SpeechFrontEnd(FbankConfig{}, frame_window(a));
    load_data(a, true);
    model_ = std::make_unique<SequenceModel>(asr_model_config(a, frontend_.features(), max_positions_of(a)), d);
    model_->init_parameters(a.seed);
    return *model_;
  }
  int64_t default_batch() const override { return 16; }
  int64_t steps_per_epoch(int64_t batch) const override { return std::max<int64_t>(1, train_.size() / batch); }
  Schedule schedule(const TrainingRecipe& a, int64_t steps) const override { return a.make_schedule(1e-4f, steps); }
  int default_plateau() const override { return 3; }
  std::map<std::string, std::string> metadata(const TrainingRecipe& a) const override {
    std::map<std::string, std::string> m = frontend_.metadata();
    m["speech.train_data"] = a.data;
    m["speech.train_utterances"] = std::to_string(train_.size());
    m["speech.valid_data"] = a.valid;
    m["speech.valid_utterances"] = std::to_string(valid_.size());
    m["speech.spec_augment"] = a.spec_augment ? "1" : "0";
    m["speech.vtlp"] = exact(a.vtlp);
    const WaveAugmentation w = wave_augmentation(a);
    for (auto [name, d] : {std::pair{"speed", &w.speed}, {"reverb", &w.reverb}, {"noise", &w.noise},
                           {"telephone", &w.telephone}, {"codec", &w.codec}, {"clipping", &w.clip}})
      m[std::string("speech.") + name] = wave_draw_text(*d);
    m["speech.max_frames"] = std::to_string(a.max_frames);
    if (!a.init.empty()) m["lt.train.init"] = a.init;
    return m;
  }
  std::map<std::string, Tensor> tensors() const override { return frontend_.tensors(); }
  TrainingTask& task(const TrainingRecipe& a, int64_t) override {
    SpeechAugmentation augmentation;
    augmentation.wave = wave_augmentation(a);
    augmentation.masks = a.spec_augment;
    augmentation.vtlp = a.vtlp;
    augmentation.max_positions = model_->config().max_positions;
    task_ = std::make_unique<SpeechTrainingTask>(std::move(train_), std::move(valid_), a.seed, frontend_, augmentation);
    return *task_;
  }
  std::string description() const override {
    const FrameWindow& w = frontend_.window();
    return "speech (CTC over 39 phones), " + std::to_string(frontend_.fbank_config().bins) + " mel bins x" +
           std::to_string(w.stack) + " frames per position, with " + std::to_string(w.past) + " before and " +
           std::to_string(w.future) + " after";
  }
  bool reports_bits() const override { return false; }
  FinalScore finish(const TrainingRecipe& a, int64_t step, int64_t batch, const Precision& eval) override {
    if (task_->valid_set().size() == 0)
      return {a.output + ": step " + std::to_string(step) + " (no --valid data to score)",
              {{"event", "done"}, {"step", step}}};
    ForwardOptions options;
    options.precision = eval;
    const SpeechScore s = score_speech(*model_, task_->valid_set(), batch, options);
    char line[256];
    std::snprintf(line, sizeof line, "step %lld, valid loss %.4f, PER %.2f%% on %lld utterances", (long long)step,
                  s.loss, 100 * s.overall.rate(), (long long)s.utterances);
    return {a.output + ": " + line,
            {{"event", "eval"}, {"step", step}, {"test_loss", s.loss}, {"test_per", s.overall.rate()}}};
  }


  SequenceModel& load(const std::string& path, Device d) override {
    SpeechModel m = load_speech_model(path, d);
    model_ = std::move(m.model);
    frontend_ = m.frontend;
    return *model_;
  }
  std::map<std::string, std::string> model_metadata() const override { return model_->metadata(); }
  std::map<std::string, std::string> architecture() const override {
    std::map<std::string, std::string> a = model_->metadata();
    for (const auto& [k, v] : frontend_.metadata()) a[k] = v;
    return a;
  }
  std::string save(const std::string& path, const std::map<std::string, std::string>& meta) override {
    model_->save(path, meta, frontend_.tensors());
    return path + ": speech model written without optimizer state\n";
  }
  std::string evaluate(const TrainingRecipe& a, Device) override {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t left_out = 0;
    const SpeechScore s = score_manifest(a, *model_, frontend_, a.data, left_out);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (a.format == "json") {
      nlohmann::json speakers = nlohmann::json::object();
      for (const auto& [name, c] : s.by_speaker) speakers[name] = counts_json(c);
      nlohmann::json j = counts_json(s.overall);
      j.update({{"loss", s.loss}, {"utterances", s.utterances}, {"left_out", left_out}, {"model", a.model},
                {"data", a.data}, {"decoder", a.beam > 1 ? "beam" : "greedy"}, {"seconds", secs},
                {"speakers", speakers}});
      return j.dump() + "\n";
    }
    if (left_out > 0)
      std::fprintf(stderr, "%s: %lld utterances left out (too short for their phones, too long, or without phones)\n",
                   a.name.c_str(), (long long)left_out);
    char line[512];
    std::snprintf(line, sizeof line,
                  "PER %.2f%% (%lld errors: %lld sub, %lld del, %lld ins, over %lld phones) on %lld utterances of ",
                  100 * s.overall.rate(), (long long)s.overall.errors, (long long)s.overall.substitutions,
                  (long long)s.overall.deletions, (long long)s.overall.insertions, (long long)s.overall.reference,
                  (long long)s.utterances);
    char tail[128];
    std::snprintf(tail, sizeof tail, ", loss %.4f, %s decoding, %.1f s\n", s.loss, a.beam > 1 ? "beam" : "greedy", secs);
    std::string out = line + a.data + tail;
    if (s.by_speaker.size() > 1)
      for (const auto& [name, c] : s.by_speaker) {
        std::snprintf(line, sizeof line, "  %-28s PER %6.2f%% over %lld phones\n", name.c_str(), 100 * c.rate(),
                      (long long)c.reference);
        out += line;
      }
    return out;
  }
  // The PER of each --score manifest, as speech.per.NAME (NAME its file name without .tsv).
  void score(const TrainingRecipe& a, std::map<std::string, std::string>& meta, std::string& report) override {
    for (const std::string& manifest : a.score) {
      std::string name = std::filesystem::path(manifest).filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tsv") == 0) name.resize(name.size() - 4);
      int64_t left_out = 0;
      const SpeechScore s = score_manifest(a, *model_, frontend_, manifest, left_out);
      char line[512];
      std::snprintf(line, sizeof line, "%.2f%% (%s decoding%s; %lld utterances, %lld phones; %s)",
                    100 * s.overall.rate(), a.beam > 1 ? "beam" : "greedy",
                    a.beam > 1 ? (", width " + std::to_string(a.beam)).c_str() : "", (long long)s.utterances,
                    (long long)s.overall.reference, manifest.c_str());
      meta["speech.per." + name] = line;
      report += a.output + ": PER " + line + "\n";
      if (left_out > 0)
        std::fprintf(stderr, "%s: %s: %lld utterances left out\n", a.name.c_str(), manifest.c_str(), (long long)left_out);
    }
  }

 private:
  void load_data(const TrainingRecipe& a, bool fit_statistics) {
    wave_augmentation(a);  // a bad flag fails before the data loads
    const int64_t max_positions = model_ ? model_->config().max_positions : max_positions_of(a);
    train_ = load_split("train", a.data, a, frontend_, max_positions, fit_statistics);
    if (!a.valid.empty()) valid_ = load_split("valid", a.valid, a, frontend_, max_positions, false);
  }
  SpeechFrontEnd frontend_;
  SpeechSet train_, valid_;
  std::unique_ptr<SequenceModel> model_;
  std::unique_ptr<SpeechTrainingTask> task_;
};


}  // namespace

std::unique_ptr<TaskFamily> speech_family() { return std::make_unique<SpeechFamily>(); }

}  // namespace lt
