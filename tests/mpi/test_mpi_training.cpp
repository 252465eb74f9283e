// lt-train under mpirun on the CPU (ctest label mpi): 2 ranks of one thread
// against one process, micro-batches against whole batches, resumes across
// world sizes, and a rank killed mid-run. Every run is tiny: the point is
// the arithmetic of the split, which does not depend on the model's size.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>

#include "apps/cli.h"
#include "apps/speech_manifest.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

const std::string kMpirun = std::string(LT_MPIEXEC) + " --allow-run-as-root --oversubscribe ";

CommandResult lt_train(const TempDir& dir, const std::string& args) { return run_tool(dir, "lt-train", args); }

// lt-train as np ranks of one thread each.
CommandResult lt_train_ranks(const TempDir& dir, int np, const std::string& args) {
  return run_program(dir, LT_MPIEXEC,
                     "--allow-run-as-root --oversubscribe -np " + std::to_string(np) + " " + q(std::string(LT_BIN_DIR) +
                     "/lt-train") + " -t 1 " + args);
}

double max_abs_diff(const std::string& a, const std::string& b) {
  const auto x = tensor_values(a), y = tensor_values(b);
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (const auto& [name, v] : x) {
    if (name.rfind("optimizer.", 0) == 0) continue;
    const std::vector<float>& w = y.at(name);
    REQUIRE(v.size() == w.size());
    for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::fabs(double(v[i]) - double(w[i])));
  }
  return worst;
}

// The tasks' tiny runs with dropout (and SpecAugment and a warp for
// speech), every step's batch split 3 + 3 (2 + 2 for speech) over the ranks;
// speech with both encoders.
struct TaskRun {
  const char* name;
  std::string args;
};
std::string tiny(uint64_t seed) {
  return " --layers 1 --d-model 16 --heads 2 --dropout 0.2 -q -s " + std::to_string(seed % 1000);
}
std::string copy_run(uint64_t seed) { return "--task copy -b 6" + tiny(seed); }
std::vector<TaskRun> task_runs(const TempDir& dir, uint64_t seed) {
  const std::string data = tiny_idx_dataset(dir, seed), speech = synthesize_manifest(dir, "speech");
  return {{"copy", copy_run(seed)},
          {"image", "--data " + q(data) + " --mixtures 2 -b 6" + tiny(seed)},
          {"asr", "--task asr --data " + q(speech) + " --valid " + q(speech) + " -b 4 --spec-augment --vtlp 0.1" +
                      tiny(seed)},
          {"bilstm", "--task asr --encoder bilstm --layers 2 --d-model 8 --data " + q(speech) + " --valid " + q(speech) +
                         " -b 4 --dropout 0.2 -q -s " + std::to_string(seed % 1000)}};
}

void require_ok(const CommandResult& r) {
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("2 ranks train copy, image, asr and Bi-LSTM asr models bit for bit as one process of 2 threads, and reproducibly") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  for (const TaskRun& t : task_runs(dir, seed)) {
    INFO("task " << t.name);
    const std::string two = dir.file(std::string(t.name) + "-ranks.safetensors"),
                      again = dir.file(std::string(t.name) + "-ranks-again.safetensors"),
                      threads = dir.file(std::string(t.name) + "-threads.safetensors"),
                      one = dir.file(std::string(t.name) + "-one.safetensors");
    const std::string args = t.args + " --steps 20";
    const CommandResult r = lt_train_ranks(dir, 2, args + " -o " + q(two));
    require_ok(r);
    CHECK(r.out.find(two + ": step 20") == 0);  // rank 0 alone prints the result
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    require_ok(lt_train_ranks(dir, 2, args + " -o " + q(again)));
    const CommandResult alone = lt_train(dir, args + " -t 2 -o " + q(threads));
    require_ok(alone);
    // The test scores, split over the ranks, are one process's.
    CHECK(r.out.substr(two.size()) == alone.out.substr(threads.size()));
    require_ok(lt_train(dir, args + " -t 1 -o " + q(one)));
    CHECK(tensor_values(two) == tensor_values(again));
    CHECK(tensor_values(two) == tensor_values(threads));
    // One thread sums each product over the whole batch at once: the same
    // masks and rows, another order of summation (amplified over 20 Adam steps).
    CHECK(max_abs_diff(two, one) < 1e-4);
    CHECK(load_safetensors(two).meta("lt.train.world_size") == "2");
  }
}

TEST_CASE("micro-batches add up to the whole batch, in one process and over 2 ranks") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const TaskRun copy{"copy", copy_run(seed) + " --steps 20"};
  const std::string whole = dir.file("whole.safetensors"), micro = dir.file("micro.safetensors"),
                    ranks = dir.file("ranks.safetensors"), ranks_micro = dir.file("ranks-micro.safetensors");
  require_ok(lt_train(dir, copy.args + " -t 1 -o " + q(whole)));
  require_ok(lt_train(dir, copy.args + " -t 1 --micro-batch 4 -o " + q(micro)));
  require_ok(lt_train_ranks(dir, 2, copy.args + " -o " + q(ranks)));
  require_ok(lt_train_ranks(dir, 2, copy.args + " --micro-batch 1 -o " + q(ranks_micro)));
  CHECK(max_abs_diff(whole, micro) < 1e-4);
  CHECK(max_abs_diff(ranks, ranks_micro) < 1e-4);
  CHECK(max_abs_diff(whole, ranks_micro) < 1e-4);
}

TEST_CASE("a run resumes on another number of ranks where the straight run would be") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const TaskRun copy{"copy", copy_run(seed) + " --steps 20"};
  const std::string straight_ranks = dir.file("straight-ranks.safetensors"),
                    straight_threads = dir.file("straight-threads.safetensors"),
                    from_ranks = dir.file("from-ranks.safetensors"), from_one = dir.file("from-one.safetensors");
  require_ok(lt_train_ranks(dir, 2, copy.args + " -o " + q(straight_ranks)));
  require_ok(lt_train(dir, copy.args + " -t 2 -o " + q(straight_threads)));
  // 2 ranks to step 8, then one process of 2 threads to 20.
  const std::string eight = copy_run(seed) + " --steps 8";
  require_ok(lt_train_ranks(dir, 2, eight + " -o " + q(from_ranks)));
  CHECK(load_safetensors(from_ranks).meta("lt.train.world_size") == "2");
  require_ok(lt_train(dir, "--task copy --resume --steps 20 -q -t 2 -o " + q(from_ranks)));
  CHECK(tensor_values(from_ranks) == tensor_values(straight_threads));
  CHECK(load_safetensors(from_ranks).meta("lt.train.world_size") == "1");
  // One process to step 8, then 2 ranks to 20.
  require_ok(lt_train(dir, eight + " -t 2 -o " + q(from_one)));
  require_ok(lt_train_ranks(dir, 2, "--task copy --resume --steps 20 -q -o " + q(from_one)));
  CHECK(tensor_values(from_one) == tensor_values(straight_ranks));
}

namespace {

// mpirun of an endless 2-rank copy run in the background, a checkpoint every
// 3 steps: its pid, its ranks' pids and, once it ends, its exit status.
struct BackgroundRun {
  const TempDir& dir;
  std::string ckpt = dir.file("run.safetensors"), pid_file = dir.file("mpirun.pid"), rc_file = dir.file("mpirun.rc"),
              err = dir.file("mpirun.err");
  explicit BackgroundRun(const TempDir& d) : dir(d) {
    const std::string cmd = kMpirun + "-np 2 " + q(std::string(LT_BIN_DIR) + "/lt-train") +
                            " -t 1 --task copy --layers 1 --d-model 16 --heads 2 -b 4 --steps 1000000 "
                            "--checkpoint-every 3 -q -o " + q(ckpt);
    const std::string background = "(" + cmd + " >/dev/null 2>" + q(err) + " </dev/null & echo $! >" + q(pid_file) +
                                   "; wait $!; echo $? >" + q(rc_file) + ") &";
    REQUIRE(std::system(background.c_str()) == 0);
    wait_for(ckpt, 60);  // training has begun
    REQUIRE(std::filesystem::exists(ckpt));
  }
  static void wait_for(const std::string& path, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid_t mpirun() const { return pid_t(std::stol(read_text(pid_file))); }
  // The ranks: mpirun's children running lt-train.
  std::vector<pid_t> ranks() const {
    const std::string out = dir.file("ranks");
    REQUIRE(std::system(("pgrep -P " + std::to_string(mpirun()) + " '^lt-train$' >" + q(out)).c_str()) == 0);
    std::vector<pid_t> pids;
    std::istringstream in(read_text(out));
    for (long p; in >> p;) pids.push_back(pid_t(p));
    return pids;
  }
  // Seconds until mpirun ended (at most `limit` + 30), and its status.
  std::pair<double, int> wait_end(int limit) const {
    const auto t0 = std::chrono::steady_clock::now();
    wait_for(rc_file, limit + 30);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(std::filesystem::exists(rc_file));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the status written
    return {seconds, std::stoi(read_text(rc_file))};
  }
};

}  // namespace

TEST_CASE("a rank killed with SIGKILL ends the whole job within 30 s, naming the rank, and the checkpoint loads") {
  TempDir dir;
  BackgroundRun run(dir);
  const std::vector<pid_t> ranks = run.ranks();
  REQUIRE(ranks.size() == 2);
  REQUIRE(::kill(ranks[1], SIGKILL) == 0);
  const auto [seconds, status] = run.wait_end(30);
  CHECK(seconds < 30);
  CHECK(status != 0);
  const std::string text = read_text(run.err);
  INFO("mpirun's stderr: " << text);
  CHECK(text.find("exited on signal 9") != std::string::npos);
  // The last checkpoint is whole: it loads and resumes in one process.
  const int64_t step = load_safetensors(run.ckpt).meta_int("lt.train.step");
  CHECK(step % 3 == 0);
  require_ok(lt_train(dir, "--task copy --resume --steps " + std::to_string(step + 2) + " -q -t 1 -o " + q(run.ckpt)));
}

TEST_CASE("Ctrl-C to mpirun stops every rank at one step, whose checkpoint rank 0 writes and reports once") {
  TempDir dir;
  BackgroundRun run(dir);
  REQUIRE(::kill(run.mpirun(), SIGINT) == 0);
  const auto [seconds, status] = run.wait_end(30);
  CHECK(seconds < 30);
  CHECK(status == 1);  // mpirun's, where lt-train alone exits 130 (docs/training.md)
  const std::string text = read_text(run.err);
  INFO("mpirun's stderr: " << text);
  const size_t at = text.find("lt-train: interrupted at step ");
  REQUIRE(at != std::string::npos);
  CHECK(text.find("interrupted", at + 12) == std::string::npos);  // once, from rank 0
  const int64_t said = std::stoll(text.substr(at + 30));
  CHECK(load_safetensors(run.ckpt).meta_int("lt.train.step") == said);
}

TEST_CASE("lt-train under mpirun refuses a batch with fewer rows than ranks, and --eval, in one line per rank") {
  TempDir dir;
  const CommandResult r = lt_train_ranks(dir, 2, "--task copy --layers 1 --d-model 16 --heads 2 -b 1 --steps 2 -q -o " +
                                                     q(dir.file("x.safetensors")));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("needs at least one row per rank") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("x.safetensors")));
  const CommandResult e = lt_train_ranks(dir, 2, "--eval -m " + q(dir.file("x.safetensors")));
  CHECK(e.exit_code != 0);
  CHECK(e.err.find("start them without mpirun") != std::string::npos);
}

// On a lent GPU (reported skipped elsewhere): NCCL refuses two ranks on one
// GPU, so one GPU shows the NCCL path with one rank and the host-staged sum
// with two ranks sharing it.
TEST_CASE("cuda under mpirun: one rank through NCCL as a plain process, two sharing the GPU through the host") {
  if (!cuda_or_skip()) return;
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::string args = copy_run(seed) + " --steps 12 -d cuda";
  const std::string plain = dir.file("plain.safetensors"), nccl = dir.file("nccl.safetensors"),
                    host = dir.file("host.safetensors"), refused = dir.file("refused.safetensors");
  require_ok(lt_train(dir, args + " -o " + q(plain)));
  require_ok(lt_train_ranks(dir, 1, args + " -o " + q(nccl)));
  // A sum over one rank leaves the gradient as it is; the GPU's atomic
  // additions (embedding and LayerNorm gradients) make any two runs differ
  // by rounding, so the comparison is the host-summed one's.
  CHECK(max_abs_diff(nccl, plain) < 1e-4);
  require_ok(lt_train_ranks(dir, 2, args + " --gpu-sum host -o " + q(host)));
  CHECK(max_abs_diff(host, plain) < 1e-4);
  const CommandResult r = lt_train_ranks(dir, 2, args + " -o " + q(refused));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("which NCCL refuses") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(refused));
}
