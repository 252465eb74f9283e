// lt-train --task asr end to end on utterances the test synthesizes with
// espeak-ng: train, resume, evaluate (text and JSON, per speaker), export,
// and one-line refusals of bad input.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/speech_manifest.h"

using namespace lt;
using namespace lt::test;

namespace {

// A refusal: a non-zero exit and one line on stderr that says want.
void one_line(const CommandResult& r, const std::string& want) {
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find(want) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

const std::string kTiny = "--layers 1 --d-model 16 --heads 2 --batch 2 --plateau 1 -q";

}  // namespace

TEST_CASE("lt-train --task asr trains on a manifest, resumes, and --eval reports PER overall and per speaker") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train"), model = tmp.file("asr.safetensors");
  CommandResult r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --valid '" + train + "' " + kTiny +
                                                   " --steps 4 --eval-every 2 --spec-augment -o '" + model + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("PER") != std::string::npos);

  // Resumed without --eval-every: the run's own (2) evaluates at step 6.
  const std::string log = tmp.file("resumed.jsonl");
  r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --valid '" + train + "' --resume --steps 8 -q -o '" +
                                    model + "' --log '" + log + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("step 8") != std::string::npos);
  CHECK(read_text(log).find("\"event\":\"eval\",\"step\":6") != std::string::npos);

  r = run_tool(tmp, "lt-train", "--eval -m '" + model + "' --data '" + train + "' -f json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["utterances"] == 4);
  CHECK(j["phones"] == 33);
  CHECK(j["per"].get<double>() >= 0);
  CHECK(j["speakers"].size() == 2);
  CHECK(j["speakers"]["en-us"]["phones"].get<int>() + j["speakers"]["en-gb"]["phones"].get<int>() == 33);

  r = run_tool(tmp, "lt-train", "--eval -m '" + model + "' --data '" + train + "' --beam 8");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("beam decoding") != std::string::npos);

  const std::string exported = tmp.file("export.safetensors");
  r = run_tool(tmp, "lt-train", "--export -m '" + model + "' -o '" + exported + "'");
  REQUIRE(r.exit_code == 0);
  r = run_tool(tmp, "lt-train", "--eval -m '" + exported + "' --data '" + train + "' -f json");
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["per"] == j["per"]);
}

TEST_CASE("lt-train --export of a speech model scores --score manifests and adds --note entries to its metadata") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train"), model = tmp.file("asr.safetensors");
  REQUIRE(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny + " --steps 3 -o '" + model + "'")
              .exit_code == 0);
  const Checkpoint trained = load_safetensors(model);
  CHECK(std::stod(trained.meta("lt.train.seconds")) > 0);  // the loop's training time

  const std::string exported = tmp.file("export.safetensors");
  CommandResult r = run_tool(tmp, "lt-train", "--export -m '" + model + "' -o '" + exported + "' --score '" + train +
                                                  "' --beam 4 --note 'corpus=four espeak-ng sentences' --note x.y-1_z=");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Checkpoint ck = load_safetensors(exported);
  // The same PER --eval prints, with its decoding and counts.
  r = run_tool(tmp, "lt-train", "--eval -m '" + model + "' --data '" + train + "' --beam 4 -f json");
  REQUIRE(r.exit_code == 0);
  char want[64];
  std::snprintf(want, sizeof want, "%.2f%% (beam decoding, width 4; 4 utterances, 33 phones; ",
                100 * nlohmann::json::parse(r.out)["per"].get<double>());
  CHECK(ck.meta("speech.per.train").rfind(want, 0) == 0);
  CHECK(ck.meta("note.corpus") == "four espeak-ng sentences");
  CHECK(ck.meta("note.x.y-1_z") == "");
  CHECK(ck.meta("lt.train.seconds") == trained.meta("lt.train.seconds"));

  // --average: a continuation of the model shares its front end; the mean
  // keeps the statistics and averages the parameters. Another frame stack is
  // another model.
  const std::string continued = tmp.file("continued.safetensors"), mean = tmp.file("mean.safetensors");
  REQUIRE(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --init '" + model + "' --steps 2 -o '" +
                                        continued + "'")
              .exit_code == 0);
  r = run_tool(tmp, "lt-train", "--export -m '" + model + "' --average '" + continued + "' -o '" + mean + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Checkpoint a = load_safetensors(model), b = load_safetensors(continued), m = load_safetensors(mean);
  CHECK(m.tensors.at("frontend.mean").to_vector() == a.tensors.at("frontend.mean").to_vector());
  const std::vector<float> wa = a.tensors.at("input_projection.weight").to_vector(),
                           wb = b.tensors.at("input_projection.weight").to_vector(),
                           wm = m.tensors.at("input_projection.weight").to_vector();
  CHECK(wa != wb);
  for (size_t k = 0; k < wm.size(); ++k) CHECK(wm[k] == doctest::Approx((double(wa[k]) + wb[k]) / 2).epsilon(1e-6));
  const std::string stacked = tmp.file("stack2.safetensors");
  REQUIRE(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny + " --frame-stack 2 --steps 1 -o '" +
                                        stacked + "'")
              .exit_code == 0);
  one_line(run_tool(tmp, "lt-train", "--export -m '" + model + "' --average '" + stacked + "' -o '" + mean + "'"),
           "frame_stack");
  CHECK(ck.tensors.count("optimizer.exp_avg") == 0);

  one_line(run_tool(tmp, "lt-train", "--export -m '" + model + "' -o '" + tmp.file("b.safetensors") + "' --note '=x'"),
           "--note: '=x' is not KEY=TEXT");
  one_line(run_tool(tmp, "lt-train", "--export -m '" + model + "' -o '" + tmp.file("b.safetensors") + "' --note 'a b=x'"),
           "--note: 'a b=x' is not KEY=TEXT");
  one_line(run_tool(tmp, "lt-train", "--eval -m '" + model + "' --data '" + train + "' --note a=b"),
           "--score, --note and --average are options of --export");
  one_line(run_tool(tmp, "lt-train", "--export -m '" + model + "' -o '" + tmp.file("c.safetensors") + "' --score '" +
                                         tmp.file("missing.tsv") + "'"),
           "missing.tsv");
  CHECK(!std::filesystem::exists(tmp.file("b.safetensors")));
  CHECK(!std::filesystem::exists(tmp.file("c.safetensors")));
}

TEST_CASE("lt-train --task asr resumes bitwise where a straight run ends, keeping its SpecAugment, warp and waveform changes") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train");
  const std::string straight = tmp.file("straight.safetensors"), resumed = tmp.file("resumed.safetensors");
  const std::string unwarped = tmp.file("unwarped.safetensors");
  const std::string common =
      "--task asr --data '" + train + "' " + kTiny + " --spec-augment --dropout 0.2 --speed 0.5 --noise 0.5:10:20 ";
  REQUIRE(run_tool(tmp, "lt-train", common + "--vtlp 0.1 --steps 6 -o '" + straight + "'").exit_code == 0);
  REQUIRE(run_tool(tmp, "lt-train", common + "--vtlp 0.1 --steps 3 -o '" + resumed + "'").exit_code == 0);
  const std::string half_seconds = load_safetensors(resumed).meta("lt.train.seconds");
  // Resumed without repeating --spec-augment or --vtlp: the checkpoint's recipe has them.
  const CommandResult r =
      run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --resume --steps 6 -q -o '" + resumed + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Checkpoint ck = load_safetensors(resumed);
  CHECK(ck.meta("speech.spec_augment") == "1");
  CHECK(std::stof(ck.meta("speech.vtlp")) == 0.1f);
  CHECK(ck.meta("speech.speed") == "0.5:0.9:1.1");
  CHECK(ck.meta("speech.noise") == "0.5:10:20");
  CHECK(ck.meta("speech.codec") == "0:0:0");
  CHECK(tensor_values(resumed) == tensor_values(straight));
  // Training time adds up over the two runs.
  CHECK(std::stod(ck.meta("lt.train.seconds")) > std::stod(half_seconds));
  // The warp changes what the model is trained on.
  REQUIRE(run_tool(tmp, "lt-train", common + "--steps 6 -o '" + unwarped + "'").exit_code == 0);
  CHECK(load_safetensors(unwarped).meta("speech.vtlp") == "0");
  CHECK(tensor_values(unwarped) != tensor_values(straight));
}

TEST_CASE("lt-train --task asr --init starts from a model's weights, front end and statistics with a fresh optimizer") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train");
  const std::string first = tmp.file("first.safetensors"), second = tmp.file("second.safetensors");
  REQUIRE(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny + " --frame-stack 2 --steps 3 -o '" +
                                        first + "'").exit_code == 0);
  // No optimizer step: the weights are the init model's.
  CommandResult r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --init '" + first +
                                                  "' --lr 1e-30 --batch 2 --steps 1 -q -o '" + second + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Checkpoint a = load_safetensors(first), b = load_safetensors(second);
  CHECK(b.meta_int("lt.train.step") == 1);
  CHECK(b.meta("lt.train.init") == first);
  CHECK(b.meta("frame_stack") == "2");
  CHECK(b.get("frontend.mean", {40}).to_vector() == a.get("frontend.mean", {40}).to_vector());
  CHECK(b.get("frontend.inv_std", {40}).to_vector() == a.get("frontend.inv_std", {40}).to_vector());
  const std::vector<float> w0 = a.get("predictor.weight", a.tensors.at("predictor.weight").shape()).to_vector(),
                           w1 = b.get("predictor.weight", a.tensors.at("predictor.weight").shape()).to_vector();
  double most = 0;
  for (size_t i = 0; i < w0.size(); ++i) most = std::max(most, double(std::abs(w0[i] - w1[i])));
  CHECK(most < 1e-20);
  r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --init '" + first + "' --layers 2 --steps 1 -o '" +
                                    tmp.file("third.safetensors") + "'");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("--layers cannot be combined with --init") != std::string::npos);
}

TEST_CASE("lt-train --task asr --context: frames on both sides of a bidirectional model's positions, before a causal one's") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train");
  const std::string both = tmp.file("both.safetensors"), causal = tmp.file("causal.safetensors");
  CommandResult r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --valid '" + train + "' " + kTiny +
                                                  " --context 4 --steps 2 -o '" + both + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Checkpoint ck = load_safetensors(both);
  CHECK(ck.meta("frame_past") == "4");
  CHECK(ck.meta("frame_future") == "4");
  CHECK(ck.tensors.at("input_projection.weight").shape() == Shape{8, 40 * (4 + 3 + 4)});
  r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny +
                                    " --attention causal-linear --context 5 --frame-stack 2 --steps 2 -o '" + causal + "'");
  REQUIRE(r.exit_code == 0);
  ck = load_safetensors(causal);
  CHECK(ck.meta("frame_past") == "5");
  CHECK(ck.meta("frame_future") == "0");
  CHECK(ck.tensors.at("input_projection.weight").shape() == Shape{8, 40 * (5 + 2)});
  // By default a transformer reads 8 frames on each side, a causal one 8 before.
  const std::string plain = tmp.file("default.safetensors");
  REQUIRE(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny +
                                        " --attention causal-linear --steps 1 -o '" + plain + "'").exit_code == 0);
  CHECK(load_safetensors(plain).meta("frame_past") == "8");
  CHECK(load_safetensors(plain).meta("frame_future") == "0");
  // The model is read with its context: --eval scores it, lt-asr streams it.
  r = run_tool(tmp, "lt-train", "--eval -m '" + causal + "' --data '" + train + "'");
  CHECK(r.exit_code == 0);
  r = run_tool(tmp, "lt-asr", "--stream -m '" + causal + "' '" + tmp.file("train-0.wav") + "'");
  CHECK(r.exit_code == 0);
  // Another window is another architecture: not on --resume, not with --init.
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --resume --context 3 --steps 4 -q -o '" + both + "'"),
           "its model has --context 4, the command line asks for 3");
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --init '" + both + "' --future 2 --steps 1 -o '" +
                                         tmp.file("other.safetensors") + "'"),
           "--future cannot be combined with --init");
}

TEST_CASE("lt-train --task asr --ff-conv: a convolution in each feed-forward sub-layer, centred or causal") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train");
  const std::string conv = tmp.file("conv.safetensors");
  CommandResult r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny + " --ff-conv 3 --steps 2 -o '" + conv + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Checkpoint ck = load_safetensors(conv);
  const int64_t ff = ck.tensors.at("transformer.layers.0.linear1.weight").dim(0);
  CHECK(ck.tensors.at("transformer.layers.0.ff_conv.weight").shape() == Shape{ff, 3});
  CHECK(ck.tensors.at("transformer.layers.0.ff_conv.bias").shape() == Shape{ff});
  CHECK(run_tool(tmp, "lt-train", "--eval -m '" + conv + "' --data '" + train + "'").exit_code == 0);
  r = run_tool(tmp, "lt-asr", "-m '" + conv + "' '" + tmp.file("train-0.wav") + "'");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("train-0.wav\t") != std::string::npos);
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --resume --ff-conv 5 --steps 4 -q -o '" + conv + "'"),
           "its model has --ff-conv 3, the command line asks for 5");
  // A causal model's convolution reads the positions before: any K, and lt-asr streams it.
  const std::string causal = tmp.file("causal.safetensors");
  r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny + " --attention causal-linear --ff-conv 4 --steps 2 -o '" +
                                    causal + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(load_safetensors(causal).tensors.at("transformer.layers.0.ff_conv.weight").shape() == Shape{ff, 4});
  r = run_tool(tmp, "lt-asr", "--stream -m '" + causal + "' '" + tmp.file("train-0.wav") + "'");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("train-0.wav\t") != std::string::npos);
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' " + kTiny + " --ff-conv 4 --steps 1 -o '" +
                                         tmp.file("e") + "'"),
           "taps must be odd");
}

TEST_CASE("lt-train --task asr refuses bad input with one line naming the problem") {
  TempDir tmp;
  const std::string missing = tmp.file("none.tsv");
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + missing + "' " + kTiny + " --steps 1 -o '" + tmp.file("m") + "'"),
           missing);
  // A manifest whose audio is not audio.
  const std::string bad_audio = tmp.file("bad.wav");
  write_bytes(bad_audio, std::vector<uint8_t>(1000, 7));
  const std::string tsv = "path\tduration_s\tspeaker\twords\tphones\nbad.wav\t0\tx\tHI\tHH AY\n";
  const std::string manifest = tmp.file("bad.tsv");
  write_bytes(manifest, std::vector<uint8_t>(tsv.begin(), tsv.end()));
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + manifest + "' " + kTiny + " --steps 1 -o '" + tmp.file("m2") + "'"),
           "bad.wav");
  one_line(run_tool(tmp, "lt-train", "--task image --frame-stack 2 --steps 1"), "--frame-stack");
  one_line(run_tool(tmp, "lt-train", "--task asr --mixtures 3 --steps 1"), "--mixtures");
  // Waveform augmentation flags: refused before any data is read.
  const std::string data = "--task asr --data '" + missing + "' " + kTiny + " --steps 1 -o '" + tmp.file("m3") + "'";
  one_line(run_tool(tmp, "lt-train", data + " --speed 1:0.3:0.9"), "--speed: factors outside 0.5 .. 2");
  one_line(run_tool(tmp, "lt-train", data + " --codec 2"), "--codec: '2' is not a probability in 0..1");
  one_line(run_tool(tmp, "lt-train", "--task image --noise 0.5 --steps 1"), "--noise");
  CHECK(!std::filesystem::exists(tmp.file("m3")));
}

TEST_CASE("lt-train --task asr --encoder bilstm trains the Bi-LSTM baseline, resumes bitwise, and evaluates") {
  TempDir tmp;
  const std::string train = synthesize_manifest(tmp, "train");
  const std::string straight = tmp.file("straight.safetensors"), resumed = tmp.file("resumed.safetensors");
  const std::string common =
      "--task asr --data '" + train + "' --encoder bilstm --layers 2 --d-model 8 --batch 2 --dropout 0.2 -q ";
  CommandResult r = run_tool(tmp, "lt-train", common + "--steps 4 -o '" + straight + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(run_tool(tmp, "lt-train", common + "--steps 2 -o '" + resumed + "'").exit_code == 0);
  r = run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --resume --steps 4 -q -o '" + resumed + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(tensor_values(resumed) == tensor_values(straight));
  const Checkpoint ck = load_safetensors(straight);
  CHECK(ck.meta("encoder") == "bilstm");
  CHECK(ck.tensors.count("lstm.weight_ih_l1_reverse") == 1);
  CHECK(ck.tensors.count("input_projection.weight") == 0);  // the LSTM reads the frames themselves

  r = run_tool(tmp, "lt-train", "--eval -m '" + straight + "' --data '" + train + "' -f json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["utterances"] == 4);
  CHECK(j["per"].get<double>() >= 0);

  one_line(run_tool(tmp, "lt-train", common + "--heads 2 --steps 1 -o '" + tmp.file("x.safetensors") + "'"),
           "--heads does not apply to --encoder bilstm");
  // --resume keeps the checkpoint's encoder.
  one_line(run_tool(tmp, "lt-train", "--task asr --data '" + train + "' --resume --encoder transformer -q -o '" + resumed + "'"),
           "--encoder bilstm");
}
