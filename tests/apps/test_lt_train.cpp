// lt-train end to end on a tiny IDX dataset written here: training writes a
// checkpoint and prints test bits/dim, --eval agrees with the library,
// --resume continues where training stopped, --export drops the optimizer,
// the copy task trains and evaluates, LSH attention trains and resumes, and
// bad input fails with one line.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "io/image_dataset.h"
#include "io/safetensors.h"
#include "ops/packed_linear.h"
#include "train/copy_task.h"
#include "train/image_training.h"

using namespace lt;
using namespace lt::test;

namespace {

std::string q(const std::string& path) { return "'" + path + "'"; }

// lt-train on one thread: at these sizes OpenMP's fork and join cost more
// than they save, and far more when ctest runs tests side by side.
CommandResult lt_train(const TempDir& dir, const std::string& args) { return run_tool(dir, "lt-train", args + " -t 1"); }

// A tiny model's flags: training these takes milliseconds a step.
const std::string kTiny = " --layers 1 --d-model 16 --heads 2 --mixtures 2 -b 4 ";

// stderr is exactly one line, "lt-train: ...", containing every word of what.
void check_one_line_error(const CommandResult& r, std::initializer_list<std::string> what) {
  INFO("stderr: " << r.err);
  INFO("stdout: " << r.out);
  CHECK(r.exit_code != 0);
  CHECK(r.err.rfind("lt-train: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.back() == '\n');
  for (const std::string& w : what) CHECK_MESSAGE(r.err.find(w) != std::string::npos, "missing '" << w << "'");
}

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<uint8_t> b = read_bytes(path);
  std::istringstream in(std::string(b.begin(), b.end()));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("lt-train --help lists every option with its default") {
  TempDir dir;
  CommandResult r = lt_train(dir, "--help");
  REQUIRE(r.exit_code == 0);
  for (const char* s : {"--task TEXT:{image,copy,asr}=image", "-o,--output TEXT=model.safetensors", "--resume",
                        "--eval", "--export", "--attention TEXT=causal-linear", "--optimizer TEXT:{radam,adam}=radam",
                        "--schedule TEXT:{constant,step,cosine}=constant", "--milestones", "--gamma FLOAT=0.1", "--warmup INT=0",
                        "--clip FLOAT=1", "--epochs INT=1", "-s,--seed UINT=1", "--checkpoint-every INT=500",
                        "-f,--format TEXT:{text,json}=text", "-d,--device TEXT=cpu", "--log"})
    CHECK_MESSAGE(r.out.find(s) != std::string::npos, "--help lacks " << s);
}

TEST_CASE("lt-train trains a tiny image model and --eval agrees with evaluate_images") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), ckpt = dir.file("m.safetensors"), log = dir.file("log.jsonl");
  CommandResult r = lt_train(dir, "--data " + q(data) + kTiny + "--steps 5 --checkpoint-every 2 -o " +
                                                  q(ckpt) + " --log " + q(log));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  // stdout: "<ckpt>: step 5, test X bits/dim on 6 images"
  CHECK(r.out.find(ckpt + ": step 5, test ") == 0);
  CHECK(r.out.find(" bits/dim on 6 images\n") != std::string::npos);
  Checkpoint ck = load_safetensors(ckpt);
  CHECK(ck.meta_int("lt.train.step") == 5);
  CHECK(ck.meta("lt.model") == "image");
  CHECK(ck.meta("dataset") == "data");
  CHECK(ck.has("optimizer.exp_avg"));

  // The log: one train line per step, checkpoints at 2, 4 and the end, a final eval.
  std::vector<nlohmann::json> lines = json_lines(log);
  int64_t train = 0;
  std::vector<int64_t> checkpoints;
  std::map<int64_t, double> epoch_at;  // of the train lines, by step
  for (const auto& j : lines) {
    if (j["event"] == "train") {
      ++train;
      for (const char* k : {"step", "epoch", "loss", "bits_per_dim", "lr", "examples_per_s"})
        CHECK_MESSAGE(j.contains(k), "train line lacks " << k);
      epoch_at[j["step"].get<int64_t>()] = j["epoch"].get<double>();
    }
    if (j["event"] == "checkpoint") {
      checkpoints.push_back(j["step"].get<int64_t>());
      CHECK(j["epoch"].get<double>() == epoch_at[checkpoints.back()]);
    }
  }
  CHECK(train == 5);
  CHECK(checkpoints == std::vector<int64_t>{2, 4, 5});
  REQUIRE(!lines.empty());
  CHECK(lines.back()["event"] == "eval");
  const double printed_bpd = lines.back()["test_bits_per_dim"].get<double>();

  r = lt_train(dir, "--eval -m " + q(ckpt) + " --data " + q(data) + " --format json");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.is_object());
  CHECK(j["images"] == 6);
  auto model = ImageModel::load(ckpt, Device::cpu);
  ImageEvaluation ev = evaluate_images(*model, load_image_dataset(data).test, 16);
  CHECK(j["bits_per_dim"].get<double>() == doctest::Approx(ev.bits_per_dim).epsilon(1e-6));
  CHECK(j["nats_per_dim"].get<double>() == doctest::Approx(ev.nats_per_dim).epsilon(1e-6));
  CHECK(printed_bpd == doctest::Approx(ev.bits_per_dim).epsilon(1e-6));

  r = lt_train(dir, "--eval -m " + q(ckpt) + " --data " + q(data));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(" bits/dim (") != std::string::npos);
  CHECK(r.out.find("on 6 test images") != std::string::npos);

  // Through the recurrent step, position by position: the same bits/dim up to float rounding.
  r = lt_train(dir, "--eval --recurrent -b 4 -m " + q(ckpt) + " --data " + q(data) + " -f json");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["form"] == "recurrent");
  CHECK(j["precision"] == "fp32");
  CHECK(j["images"] == 6);
  CHECK(j["bits_per_dim"].get<double>() == doctest::Approx(ev.bits_per_dim).epsilon(1e-5));
  if (cpu_has_bf16()) {  // bf16 products and state: within a percent
    r = lt_train(dir, "--eval --recurrent --bf16 -m " + q(ckpt) + " --data " + q(data) + " -f json");
    REQUIRE(r.exit_code == 0);
    j = nlohmann::json::parse(r.out);
    CHECK(j["precision"] == "bf16");
    CHECK(j["bits_per_dim"].get<double>() == doctest::Approx(ev.bits_per_dim).epsilon(1e-2));
    // ... and exactly what lt-sample-image and lt-complete run with --bf16: the step in
    // bf16, every other product (the output head's) in fp32.
    auto bf16_step = ImageModel::load(ckpt, Device::cpu);
    const ImageEvaluation sampled = evaluate_images_recurrent(*bf16_step, load_image_dataset(data).test, 64, 0,
                                                              Precision{Products::bf16, DType::bf16});
    CHECK(j["bits_per_dim"].get<double>() == doctest::Approx(sampled.bits_per_dim).epsilon(1e-12));
    // The parallel pass with bf16 products: within a percent too, and not the fp32 number.
    r = lt_train(dir, "--eval --bf16 -m " + q(ckpt) + " --data " + q(data) + " -f json");
    REQUIRE(r.exit_code == 0);
    j = nlohmann::json::parse(r.out);
    CHECK(j["form"] == "parallel");
    CHECK(j["precision"] == "bf16");
    CHECK(j["bits_per_dim"].get<double>() == doctest::Approx(ev.bits_per_dim).epsilon(1e-2));
    CHECK(j["bits_per_dim"].get<double>() != ev.bits_per_dim);
  }
}

TEST_CASE("lt-train --resume continues bitwise where training stopped and refuses to overwrite without it") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), straight = dir.file("straight.safetensors"),
                    resumed = dir.file("resumed.safetensors");
  const std::string common =
      "--data " + q(data) + " --layers 1 --d-model 16 --heads 2 --mixtures 2 -s 5 -b 5 --optimizer adam --lr 3e-3 -q ";
  REQUIRE(lt_train(dir, common + "--steps 8 -o " + q(straight)).exit_code == 0);
  REQUIRE(lt_train(dir, common + "--steps 3 -o " + q(resumed)).exit_code == 0);

  // Without --resume an existing checkpoint is never overwritten.
  const std::vector<uint8_t> before = read_bytes(resumed);
  CommandResult r = lt_train(dir, common + "--steps 8 -o " + q(resumed));
  check_one_line_error(r, {resumed, "already exists", "--resume"});
  CHECK(read_bytes(resumed) == before);

  // --resume takes the seed and the batch size from the checkpoint: a resumed
  // run sees the batches the straight one saw.
  r = lt_train(dir, "--data " + q(data) + " --optimizer adam --lr 3e-3 -q --steps 8 --resume -o " +
                                    q(resumed));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(resumed + ": step 8,") == 0);
  Checkpoint ck = load_safetensors(resumed);
  CHECK(ck.meta_int("lt.train.step") == 8);
  CHECK(tensor_values(resumed) == tensor_values(straight));
  // The metadata keeps the command that started the run and lists the resumes.
  CHECK(ck.meta("lt.train.command").find("--steps 3") != std::string::npos);
  CHECK(ck.meta("lt.train.resumed_with").find("--steps 8 --resume") != std::string::npos);
  CHECK(ck.meta("lt.train.precision") == "fp32");

  // A --bf16 run resumes with bf16 products without being told again (a resume
  // in fp32 would end elsewhere: the two precisions round differently).
  if (cpu_has_bf16()) {
    const std::string straight16 = dir.file("straight16.safetensors"), resumed16 = dir.file("resumed16.safetensors");
    const std::string log16 = dir.file("straight16.jsonl");
    REQUIRE(lt_train(dir, common + "--bf16 --steps 6 -o " + q(straight16) + " --log " + q(log16)).exit_code == 0);
    REQUIRE(lt_train(dir, common + "--bf16 --steps 3 -o " + q(resumed16)).exit_code == 0);
    r = lt_train(dir, "--data " + q(data) + " -q --steps 6 --resume -o " + q(resumed16));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(load_safetensors(resumed16).meta("lt.train.precision") == "bf16");
    CHECK(tensor_values(resumed16) == tensor_values(straight16));
    // Its test bits/dim are those of fp32 products, as --eval without --bf16 reports them.
    r = lt_train(dir, "--eval -m " + q(straight16) + " --data " + q(data) + " -b 5 -f json");
    REQUIRE(r.exit_code == 0);
    CHECK(json_lines(log16).back()["test_bits_per_dim"].get<double>() ==
          doctest::Approx(nlohmann::json::parse(r.out)["bits_per_dim"].get<double>()).epsilon(1e-9));
  }
}

TEST_CASE("lt-train --resume takes the command that started the run, refuses another architecture and a new --dropout applies") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), ckpt = dir.file("run.safetensors");
  const std::string start = "--data " + q(data) + kTiny + "-q --checkpoint-every 100 -o " + q(ckpt);
  REQUIRE(lt_train(dir, start + " --steps 2").exit_code == 0);
  // The same line with --resume continues it.
  CommandResult r = lt_train(dir, start + " --steps 3 --resume");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(load_safetensors(ckpt).meta_int("lt.train.step") == 3);
  CHECK(std::stof(load_safetensors(ckpt).meta("dropout")) == doctest::Approx(0.1));

  const std::vector<uint8_t> before = read_bytes(ckpt);
  const std::string resume = "--data " + q(data) + " -q -o " + q(ckpt) + " --steps 4 --resume";
  check_one_line_error(lt_train(dir, resume + " --layers 2"), {ckpt, "--layers 1", "asks for 2"});
  check_one_line_error(lt_train(dir, resume + " --attention softmax"),
                       {ckpt, "--attention causal-linear", "asks for softmax"});
  check_one_line_error(lt_train(dir, resume + " --preset mnist"), {ckpt, "--preset mnist"});
  CHECK(read_bytes(ckpt) == before);

  r = lt_train(dir, start + " --steps 4 --resume --dropout 0");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(std::stof(load_safetensors(ckpt).meta("dropout")) == 0.f);
}

TEST_CASE("lt-train on SIGINT writes a checkpoint at the current step that --resume continues") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), ckpt = dir.file("m.safetensors"), log = dir.file("log.jsonl");
  // std::system's shell starts background jobs with SIGINT ignored; lt-train
  // installs its own handler, so the signal reaches it anyway. The loops are
  // bounded: a lt-train that ignored the signal is killed after 30 s.
  const std::string train = q(std::string(LT_BIN_DIR) + "/lt-train") + " --data " + q(data) + kTiny +
                            "--steps 1000000 --checkpoint-every 0 -t 1 -o " + q(ckpt) + " --log " + q(log) +
                            " >/dev/null 2>" + q(dir.file("err.txt")) + " </dev/null";
  const std::string script = train + " & p=$!; i=0; while [ ! -s " + q(log) +
                             " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; kill -INT $p; i=0; "
                             "while kill -0 $p 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
                             "kill -KILL $p 2>/dev/null; wait $p; echo $? > " + q(dir.file("rc.txt"));
  REQUIRE(std::system(script.c_str()) == 0);
  std::vector<uint8_t> rc = read_bytes(dir.file("rc.txt"));
  CHECK(std::string(rc.begin(), rc.end()) == "130\n");
  std::vector<uint8_t> err = read_bytes(dir.file("err.txt"));
  const std::string err_text(err.begin(), err.end());
  INFO("stderr: " << err_text);
  CHECK(err_text.find("interrupted at step ") != std::string::npos);
  CHECK(err_text.find("--resume") != std::string::npos);
  const int64_t step = load_safetensors(ckpt).meta_int("lt.train.step");
  CHECK(step >= 1);
  CHECK(step < 1000000);
  CommandResult r = lt_train(dir, "--data " + q(data) + " -q --resume --steps " + std::to_string(step + 2) +
                                                  " -o " + q(ckpt));
  INFO("resume stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(load_safetensors(ckpt).meta_int("lt.train.step") == step + 2);
}

TEST_CASE("lt-train --export writes a model-only checkpoint that --eval accepts") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), ckpt = dir.file("m.safetensors"),
                    exported = dir.file("exported.safetensors");
  REQUIRE(lt_train(dir, "--data " + q(data) + kTiny + "--steps 2 -q -o " + q(ckpt)).exit_code == 0);
  CommandResult r = lt_train(dir, "--export -m " + q(ckpt) + " -o " + q(exported) + " --data " + q(data));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(exported + ": ") == 0);
  Checkpoint ck = load_safetensors(exported);
  for (const auto& [name, t] : ck.tensors) CHECK_MESSAGE(name.rfind("optimizer.", 0) != 0, name);
  CHECK(ck.meta("lt.model") == "image");
  CHECK(ck.metadata.count("test_bits_per_dim") == 1);
  // The weights are the trained ones.
  std::map<std::string, std::vector<float>> trained = tensor_values(ckpt), model_only = tensor_values(exported);
  for (const auto& [name, v] : model_only) CHECK(trained.at(name) == v);
  CHECK(trained.size() == model_only.size() + 2);  // exp_avg and exp_avg_sq

  CommandResult a = lt_train(dir, "--eval -m " + q(ckpt) + " --data " + q(data) + " -f json");
  CommandResult b = lt_train(dir, "--eval -m " + q(exported) + " --data " + q(data) + " -f json");
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(nlohmann::json::parse(a.out)["bits_per_dim"] == nlohmann::json::parse(b.out)["bits_per_dim"]);
  // -o must not be -m.
  check_one_line_error(lt_train(dir, "--export -m " + q(ckpt) + " -o " + q(ckpt)), {"-o", "-m"});
}

TEST_CASE("lt-train --export --average writes the mean of checkpoints of one model and refuses another model") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), exported = dir.file("mean.safetensors");
  std::vector<std::string> runs;
  for (int i = 0; i < 3; ++i) {  // three seeds, and dropout 0 for one: a training setting, not the model
    runs.push_back(dir.file("run" + std::to_string(i) + ".safetensors"));
    REQUIRE(lt_train(dir, "--data " + q(data) + kTiny + "--steps 2 -q -s " + std::to_string(seed % 1000 + i) +
                              (i == 2 ? " --dropout 0" : "") + " -o " + q(runs.back()))
                .exit_code == 0);
  }
  CommandResult r = lt_train(dir, "--export -m " + q(runs[0]) + " --average " + q(runs[1]) + " " + q(runs[2]) +
                                      " -o " + q(exported) + " --data " + q(data));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  Checkpoint ck = load_safetensors(exported);
  CHECK(ck.meta("lt.average") == runs[0] + ", " + runs[1] + ", " + runs[2]);
  CHECK(ck.metadata.count("test_bits_per_dim") == 1);
  std::vector<std::map<std::string, std::vector<float>>> values;
  for (const std::string& run : runs) values.push_back(tensor_values(run));
  for (const auto& [name, got] : tensor_values(exported)) {
    INFO(name);
    REQUIRE(got.size() == values[0].at(name).size());
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      const double want = (double(values[0].at(name)[k]) + values[1].at(name)[k] + values[2].at(name)[k]) / 3;
      worst = std::max(worst, std::abs(got[k] - want) / (std::abs(want) + 1e-30));
    }
    CHECK(worst <= 1e-7);
  }
  CHECK(values[0].at("predictor.bias") != values[1].at("predictor.bias"));  // the runs differ

  // Another architecture: one line naming the file and the difference; nothing written.
  const std::string other = dir.file("two-layers.safetensors"), refused = dir.file("refused.safetensors");
  REQUIRE(lt_train(dir, "--data " + q(data) + " --layers 2 --d-model 16 --heads 2 --mixtures 2 -b 4 --steps 1 -q -o " +
                            q(other))
              .exit_code == 0);
  check_one_line_error(lt_train(dir, "--export -m " + q(runs[0]) + " --average " + q(other) + " -o " + q(refused)),
                       {other, runs[0]});
  CHECK(!std::filesystem::exists(refused));
  check_one_line_error(lt_train(dir, "--eval -m " + q(runs[0]) + " --average " + q(runs[1]) + " --data " + q(data)),
                       {"--average", "--export"});
}

TEST_CASE("lt-train --init starts from a model's parameters with a fresh optimizer") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), first = dir.file("first.safetensors"),
                    init1 = dir.file("init1.safetensors");
  REQUIRE(lt_train(dir, "--data " + q(data) + kTiny + "--steps 3 -q -o " + q(first)).exit_code == 0);
  REQUIRE(lt_train(dir, "--data " + q(data) + " --init " + q(first) + " -b 4 --steps 2 -q -o " + q(init1)).exit_code == 0);
  Checkpoint ck = load_safetensors(init1);
  CHECK(ck.meta("lt.train.step") == "2");  // counted from 0, not from the initial model's 3
  CHECK(ck.meta("lt.train.init") == first);
  std::map<std::string, std::vector<float>> a = tensor_values(first), b = tensor_values(init1);
  for (const auto& [name, v] : b) {
    if (name.rfind("optimizer.", 0) == 0) continue;
    REQUIRE(a.count(name) == 1);
    CHECK(a.at(name).size() == v.size());
  }
  CHECK(a.at("predictor.bias") != b.at("predictor.bias"));  // it trained
  check_one_line_error(lt_train(dir, "--data " + q(data) + " --init " + q(first) + " --layers 2 --steps 1 -o " +
                                         q(dir.file("x.safetensors"))),
                       {"--layers", "--init"});
  CHECK(!std::filesystem::exists(dir.file("x.safetensors")));
}

TEST_CASE("lt-train refuses bad input with one line naming the problem") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string data = tiny_idx_dataset(dir, seed), out = " -o " + q(dir.file("never.safetensors"));

  SUBCASE("missing data folder") {
    const std::string missing = dir.file("no-such-folder");
    check_one_line_error(lt_train(dir, "--data " + q(missing) + kTiny + "--steps 1" + out), {missing});
  }
  SUBCASE("no --data") {
    check_one_line_error(lt_train(dir, kTiny + "--steps 1" + out), {"--data"});
  }
  SUBCASE("a folder with no dataset") {
    std::filesystem::create_directories(dir.file("empty/x"));
    const std::string empty = dir.file("empty");
    check_one_line_error(lt_train(dir, "--data " + q(empty) + kTiny + "--steps 1" + out),
                         {empty, "train-images-idx3-ubyte"});
  }
  SUBCASE("unknown --attention") {
    check_one_line_error(
        lt_train(dir, "--data " + q(data) + kTiny + "--attention reformer --steps 1" + out),
        {"reformer", "causal-linear", "softmax"});
    check_one_line_error(
        lt_train(dir, "--task copy --layers 1 --d-model 16 --heads 2 --attention reformer --steps 1" + out),
        {"reformer"});
  }
  SUBCASE("--heads not dividing --d-model") {
    check_one_line_error(lt_train(dir, "--data " + q(data) + " --layers 1 --d-model 16 --heads 3 --steps 1" + out),
                         {"--d-model 16", "--heads 3"});
    check_one_line_error(lt_train(dir, "--task copy --layers 1 --d-model 16 --heads 3 --steps 1" + out),
                         {"--d-model 16", "--heads 3"});
  }
  SUBCASE("a corrupt checkpoint for --eval") {
    const std::string bad = dir.file("corrupt.safetensors");
    write_bytes(bad, {0x10, 0, 0, 0, 0, 0, 0, 0, '{', '"', 'a'});
    check_one_line_error(lt_train(dir, "--eval -m " + q(bad) + " --data " + q(data)), {bad});
    check_one_line_error(lt_train(dir, "--eval -m " + q(dir.file("absent.safetensors")) + " --data " + q(data)),
                         {"absent.safetensors"});
  }
  SUBCASE("image size of checkpoint and data differ") {
    const std::string ckpt = tiny_image_checkpoint(dir, "six-by-five.safetensors", 6, 5, 1);
    check_one_line_error(lt_train(dir, "--eval -m " + q(ckpt) + " --data " + q(data)),
                         {"5x4x1", "6x5x1"});
    // Resuming training of a checkpoint on data of another size.
    const std::string other = dir.file("other-size.safetensors");
    REQUIRE(lt_train(dir, "--data " + q(tiny_idx_dataset(dir, seed, 6, 5)) + kTiny + "--steps 1 -q -o " +
                                          q(other)).exit_code == 0);
    const std::string data54 = tiny_idx_dataset(dir, seed);
    check_one_line_error(lt_train(dir, "--data " + q(data54) + " --resume --steps 2 -o " + q(other)),
                         {"5x4x1", "6x5x1"});
    // A model-only checkpoint has no optimizer state to resume.
    const std::string model_only = tiny_image_checkpoint(dir, "resume.safetensors", 5, 4, 1);
    check_one_line_error(lt_train(dir, "--data " + q(data54) + " --resume --steps 2 -o " + q(model_only)),
                         {model_only, "no optimizer state"});
  }
  SUBCASE("--eval without -m") {
    check_one_line_error(lt_train(dir, "--eval --data " + q(data)), {"-m"});
  }
  SUBCASE("an unknown flag, a bad number") {
    check_one_line_error(lt_train(dir, "--data " + q(data) + " --bogus"), {"--bogus"});
    check_one_line_error(lt_train(dir, "--data " + q(data) + " --steps ten"), {"--steps", "ten"});
  }
  SUBCASE("--recurrent without --eval, --bf16 on cuda") {
    check_one_line_error(lt_train(dir, "--recurrent --data " + q(data) + kTiny + "--steps 1" + out), {"--recurrent", "--eval"});
    check_one_line_error(lt_train(dir, "--bf16 -d cuda --data " + q(data) + kTiny + "--steps 1" + out),
                         {"--bf16", "CPU"});
    check_one_line_error(lt_train(dir, "--tf32 --data " + q(data) + kTiny + "--steps 1" + out), {"--tf32", "CUDA"});
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("never.safetensors")));
}

TEST_CASE("lt-train --memory-limit: a limit the run stays under changes nothing, one it cannot meet is one line") {
  TempDir dir;
  const std::string args = "--task copy --layers 1 --d-model 16 --heads 2 -b 8 --steps 3 -q -s 3 -o ";
  const std::string free = dir.file("free.safetensors"), limited = dir.file("limited.safetensors");
  CommandResult r = lt_train(dir, args + q(free));
  REQUIRE(r.exit_code == 0);
  r = lt_train(dir, args + q(limited) + " --memory-limit 2");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(load_safetensors(limited).tensors.at("optimizer.exp_avg").to_vector() ==
        load_safetensors(free).tensors.at("optimizer.exp_avg").to_vector());
  const std::string tiny = dir.file("tiny.safetensors");
  r = lt_train(dir, args + q(tiny) + " --memory-limit 0.000001");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("would pass the memory limit of 1e-06 GB") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(tiny));
}

TEST_CASE("lt-train --task copy trains a tiny model and --eval reports its accuracy") {
  TempDir dir;
  const std::string ckpt = dir.file("copy.safetensors");
  CommandResult r = lt_train(dir, "--task copy --layers 1 --d-model 16 --heads 2 -b 4 --steps 3 -q "
                                              "--schedule step -o " + q(ckpt));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(ckpt + ": step 3, test loss ") == 0);
  CHECK(r.out.find("accuracy ") != std::string::npos);
  Checkpoint ck = load_safetensors(ckpt);
  CHECK(ck.meta("lt.model") == "copy");
  CHECK(ck.meta_int("lt.train.step") == 3);

  r = lt_train(dir, "--eval -m " + q(ckpt) + " -b 4");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("accuracy") != std::string::npos);
  r = lt_train(dir, "--eval -m " + q(ckpt) + " -b 4 -f json");
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["accuracy"].get<double>() >= 0);
  CHECK(j["accuracy"].get<double>() <= 1);
  CHECK(j["sequences"] == 1280);  // the copy test set, whatever -b (docs/training.md)
  CHECK(std::isfinite(j["loss"].get<double>()));

  // --export drops the optimizer state of copy models too.
  const std::string exported = dir.file("copy-model.safetensors");
  r = lt_train(dir, "--export -m " + q(ckpt) + " -o " + q(exported) + " -b 4");
  INFO("export stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("accuracy") != std::string::npos);
  Checkpoint model_only = load_safetensors(exported);
  CHECK(model_only.meta("lt.model") == "copy");
  CHECK_FALSE(model_only.has("optimizer.exp_avg"));
  CHECK(lt_train(dir, "--eval -m " + q(exported) + " -b 4").exit_code == 0);

  // Resuming continues at step 3, bitwise where a straight run of 5 steps ends.
  r = lt_train(dir, "--task copy -q --steps 5 --resume --schedule step -o " + q(ckpt));
  INFO("resume stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(load_safetensors(ckpt).meta_int("lt.train.step") == 5);
  const std::string straight = dir.file("copy-straight.safetensors");
  REQUIRE(lt_train(dir, "--task copy --layers 1 --d-model 16 --heads 2 -b 4 --steps 5 -q --schedule step -o " +
                            q(straight)).exit_code == 0);
  CHECK(tensor_values(ckpt) == tensor_values(straight));

  // FAVOR+ with redraws every 2 steps: the draw is in the checkpoint and a
  // resumed run redraws where the straight one did.
  const std::string favor = dir.file("favor.safetensors"), favor_straight = dir.file("favor-straight.safetensors");
  const std::string favor_args = "--task copy --layers 1 --d-model 16 --heads 2 -b 4 -q --feature-map favor --features 6 "
                                 "--feature-redraw 2 ";
  REQUIRE(lt_train(dir, favor_args + "--steps 5 -o " + q(favor_straight)).exit_code == 0);
  REQUIRE(lt_train(dir, favor_args + "--steps 3 -o " + q(favor)).exit_code == 0);
  r = lt_train(dir, "--task copy -q --steps 5 --resume -o " + q(favor));
  INFO("favor resume stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(load_safetensors(favor).meta("feature_map") == "favor");
  CHECK(load_safetensors(favor).has("transformer.layers.0.attention.inner_attention.feature_map.omega"));
  CHECK(tensor_values(favor) == tensor_values(favor_straight));
  CHECK(lt_train(dir, "--eval -m " + q(favor) + " -b 4").exit_code == 0);
  // ... and it did redraw: one step (no redraw yet) keeps the initial draw, five do not.
  const std::string one_step = dir.file("favor-1.safetensors");
  REQUIRE(lt_train(dir, favor_args + "--steps 1 -o " + q(one_step)).exit_code == 0);
  const std::string omega = "transformer.layers.0.attention.inner_attention.feature_map.omega";
  CHECK(tensor_values(one_step).at(omega) != tensor_values(favor_straight).at(omega));

  // The image task's options do not apply to it: refused, not ignored.
  for (const std::string& flag : std::vector<std::string>{"--data " + q(dir.file("x")), "--init " + q(straight), "--mixtures 3",
                                 "--output-head categorical", "--eval-images 5"}) {
    INFO(flag);
    check_one_line_error(lt_train(dir, "--task copy --steps 1 " + flag + " -o " + q(dir.file("never.safetensors"))),
                         {flag.substr(0, flag.find(' ')), "does not apply to --task copy"});
  }
  check_one_line_error(lt_train(dir, "--eval -m " + q(ckpt) + " --recurrent"), {"--recurrent", "copy-task model"});
  CHECK_FALSE(std::filesystem::exists(dir.file("never.safetensors")));
}

TEST_CASE("lt-train trains copy and image models with LSH attention, resumes them bitwise, and --recurrent refuses them") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  // The rotations come from the step's seed: a resumed run draws what the straight one drew.
  const std::string copy = "--task copy --layers 1 --d-model 16 --heads 2 -b 4 -q --attention lsh-4 ";
  const std::string straight = dir.file("lsh-straight.safetensors"), resumed = dir.file("lsh.safetensors");
  REQUIRE(lt_train(dir, copy + "--steps 4 -o " + q(straight)).exit_code == 0);
  REQUIRE(lt_train(dir, copy + "--steps 2 -o " + q(resumed)).exit_code == 0);
  CommandResult r = lt_train(dir, "--task copy -q --steps 4 --resume -o " + q(resumed));
  INFO("resume stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(tensor_values(resumed) == tensor_values(straight));
  const Checkpoint ck = load_safetensors(resumed);
  CHECK(ck.meta("attention") == "lsh-4");
  CHECK(ck.meta_int("lsh_buckets") == 64);
  CHECK(ck.meta_int("lsh_chunk") == 32);
  CHECK_FALSE(ck.has("transformer.layers.0.attention.key_projection.weight"));
  r = lt_train(dir, "--eval -m " + q(resumed) + " -b 4");
  INFO("eval stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("accuracy") != std::string::npos);

  const std::string data = tiny_idx_dataset(dir, seed), image = dir.file("image-lsh.safetensors");
  r = lt_train(dir, "--data " + q(data) + kTiny + "--attention lsh-1 --steps 2 -q -o " + q(image));
  INFO("image stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("bits/dim") != std::string::npos);
  check_one_line_error(lt_train(dir, "--eval --recurrent -m " + q(image) + " --data " + q(data)),
                       {"LSH attention", "no recurrent form"});
}
