// Training loses nothing when it is killed or diverges: lt-train is sent
// SIGKILL at random moments of a short run that checkpoints every step (so
// many kills land while a checkpoint is being written), again and again;
// each time the checkpoint on disk loads, and resuming from the last one ends
// bit for bit where an uninterrupted run ends. A learning rate that makes
// the loss NaN stops the run at the step it happens, keeping the checkpoint
// before it.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "apps/cli.h"
#include "io/safetensors.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

std::map<std::string, std::vector<float>> values_of(const std::string& path) {
  std::map<std::string, std::vector<float>> m;
  for (const auto& [name, t] : load_safetensors(path).tensors) m[name] = t.to_vector();
  return m;
}

// Starts lt-train with args (split on spaces) and its output to /dev/null.
pid_t start_lt_train(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv;
    static std::string tool = std::string(LT_BIN_DIR) + "/lt-train";
    argv.push_back(tool.data());
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(tool.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("lt-train killed with SIGKILL at random moments leaves a checkpoint that loads and resumes bit for bit") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  const std::vector<std::string> recipe = {"--task", "copy", "--layers", "1", "--d-model", "16", "--heads", "2",
                                           "-b", "4", "--schedule", "step", "--checkpoint-every", "1", "-q",
                                           "-t", "1", "--steps", "400", "-s", std::to_string(seed % 1000)};
  const std::string straight = dir.file("straight.safetensors"), killed = dir.file("killed.safetensors");
  std::vector<std::string> args = recipe;
  args.insert(args.end(), {"-o", straight});
  int status = 0;
  waitpid(start_lt_train(args), &status, 0);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));

  args = recipe;
  args.insert(args.end(), {"--resume", "-o", killed});
  // When the checkpoint last changed: a run is killed a random few
  // milliseconds after it has written one, mid-training and often mid-write.
  auto written = [&] {
    struct stat st;
    return stat(killed.c_str(), &st) == 0 ? int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : -1;
  };
  int kills = 0, loaded = 0;
  int64_t last_step = 0;
  for (int round = 0; round < 24; ++round) {
    const int64_t before = written();
    const pid_t pid = start_lt_train(args);
    for (int wait = 0; wait < 20000 && written() == before && waitpid(pid, &status, WNOHANG) == 0; ++wait)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::microseconds(rng.integer(0, 20000)));
    kills += kill(pid, SIGKILL) == 0;
    waitpid(pid, &status, 0);
    INFO("round " << round);
    REQUIRE(written() >= 0);
    Checkpoint ck;
    REQUIRE_NOTHROW(ck = load_safetensors(killed));
    const int64_t step = ck.meta_int("lt.train.step");
    CHECK(step >= last_step);  // a checkpoint never goes back
    CHECK(step <= 400);
    last_step = step;
    ++loaded;
  }
  CHECK(kills >= 20);
  CHECK(loaded == 24);
  waitpid(start_lt_train(args), &status, 0);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(load_safetensors(killed).meta_int("lt.train.step") == 400);
  CHECK(values_of(killed) == values_of(straight));
}

TEST_CASE("lt-train whose loss turns NaN stops at that step, says so, and keeps the last checkpoint before it") {
  TempDir dir;
  const std::string ckpt = dir.file("nan.safetensors");
  const std::string args = "--task copy --layers 1 --d-model 16 --heads 2 -b 4 -q -t 1 --steps 300 --clip 0 --lr 1e6 ";
  CommandResult r = run_tool(dir, "lt-train", args + "--checkpoint-every 1 -o '" + ckpt + "'");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const size_t at = r.err.find("loss is NaN at step ");
  REQUIRE(at != std::string::npos);
  const int64_t step = std::stoll(r.err.substr(at + 20));
  CHECK(r.err.find(ckpt + " keeps step " + std::to_string(step - 1)) != std::string::npos);
  CHECK(load_safetensors(ckpt).meta_int("lt.train.step") == step - 1);
  r = run_tool(dir, "lt-train", args + "--checkpoint-every 0 -o '" + dir.file("none.safetensors") + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no checkpoint was written before it") != std::string::npos);
}
