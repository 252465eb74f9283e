// scripts/under-load.sh: the command runs beside K busy processes that are
// running before it starts and gone after it ends; it prints the command's
// wall seconds and exits with the command's status.
#include <signal.h>

#include <sstream>

#include "apps/cli.h"

using namespace lt::test;

namespace {

const std::string kScript = std::string(LT_SCRIPTS_DIR) + "/under-load.sh";

// The script's other children while the command runs: its busy loops.
std::vector<int> siblings(const std::string& listing, int self) {
  std::vector<int> pids;
  std::istringstream in(listing);
  for (int pid; in >> pid;)
    if (pid != self) pids.push_back(pid);
  return pids;
}

}  // namespace

TEST_CASE("under-load.sh runs the command beside K busy processes and stops them afterwards") {
  TempDir dir;
  const std::string listing = dir.file("children"), self = dir.file("self");
  // The command records its own pid and its parent's (the script's) children,
  // then sleeps long enough for the loops to be seen running.
  const std::string command = "sh -c 'echo $$ > \"" + self + "\"; cat /proc/$PPID/task/$PPID/children > \"" + listing +
                              "\"; grep procs_running /proc/stat >&2; sleep 0.3'";
  const CommandResult r = run_program(dir, kScript, "3 " + command);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const double seconds = std::stod(r.out);
  CHECK(seconds >= 0.3);
  CHECK(seconds < 10);
  CHECK(r.err.find("procs_running") != std::string::npos);  // the command's stdout goes to stderr

  const std::vector<int> loops = siblings(read_text(listing), std::stoi(read_text(self)));
  REQUIRE(loops.size() == 3);
  for (int pid : loops) CHECK(kill(pid, 0) != 0);  // all stopped

  // The running threads the command saw: the three loops, itself and grep, at least.
  const size_t at = r.err.find("procs_running");
  CHECK(std::stoi(r.err.substr(at + 13)) >= 4);
}

TEST_CASE("under-load.sh exits with the command's status, and 2 on bad usage") {
  TempDir dir;
  CHECK(run_program(dir, kScript, "1 sh -c 'exit 3'").exit_code == 3);
  CHECK(run_program(dir, kScript, "0 true").exit_code == 0);
  const CommandResult bad = run_program(dir, kScript, "two true");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("usage: scripts/under-load.sh K COMMAND") != std::string::npos);
  CHECK(run_program(dir, kScript, "1").exit_code == 2);
}
