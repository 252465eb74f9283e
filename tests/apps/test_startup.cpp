// Start-up: no tool needs a CUDA library to start (the backend is a module
// loaded on first use, kernels/launchers.h), a CPU job never loads it, and
// the settings libgomp reads when it loads are made before any library
// initialises (apps/common/process_setup.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "apps/cli.h"
#include "backend/device.h"

using namespace lt;
using namespace lt::test;

namespace {

const char* const kTools[] = {"lt-train", "lt-sample-image", "lt-complete", "lt-bench", "lt-asr"};

bool mentions_cuda_library(const std::string& text) {
  for (const char* lib : {"libcuda.", "libcudart", "libcublas", "liblt-cuda"})
    if (text.find(lib) != std::string::npos) return true;
  return false;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// K processes that spin until the object goes away.
struct BusyLoops {
  explicit BusyLoops(int k) {
    for (int i = 0; i < k; ++i)
      if (const pid_t pid = fork(); pid == 0) {
        for (volatile unsigned x = 0;; x = x + 1) {
        }
      } else if (pid > 0) {
        pids.push_back(pid);
      }
    usleep(200000);  // running before the tool looks
  }
  ~BusyLoops() {
    for (pid_t pid : pids) kill(pid, SIGKILL);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  }
  std::vector<pid_t> pids;
};

}  // namespace

TEST_CASE("no tool needs a CUDA library to start: ldd lists none") {
  TempDir dir;
  for (const char* tool : kTools) {
    const CommandResult r = run_program(dir, "ldd", std::string(LT_BIN_DIR) + "/" + tool);
    INFO(tool << ": " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("libopenblas") != std::string::npos);  // ldd did list the libraries
    CHECK(!mentions_cuda_library(r.out));
  }
}

TEST_CASE("a CPU job loads no CUDA library, and -d cuda loads the module, or says in one line why it cannot") {
  TempDir dir;
  const std::string model = tiny_image_checkpoint(dir, "tiny.safetensors");
  const std::string job = "-m '" + model + "' -n 1 -q -o '" + dir.file("x.png") + "'";
  // LD_DEBUG=files names every library as the loader opens it, dlopen included.
  CommandResult r = run_tool(dir, "lt-sample-image", job, "LD_DEBUG=files ");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("libopenblas") != std::string::npos);
  CHECK(!mentions_cuda_library(r.err));

  r = run_tool(dir, "lt-sample-image", job + " -d cuda", "LD_DEBUG=files ");
  if (!built_with_cuda()) {
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("built without CUDA") != std::string::npos);
    return;
  }
  CHECK(r.err.find("liblt-cuda.so") != std::string::npos);
  if (r.exit_code == 0) return;  // a GPU is here
  // Without a GPU: the tool's one line names the device (LD_DEBUG's lines apart).
  r = run_tool(dir, "lt-sample-image", job + " -d cuda");
  CHECK(r.exit_code != 0);
  CHECK(count(r.err, "\n") == 1);
  CHECK(r.err.find("lt-sample-image: cannot use device cuda: no usable CUDA device") == 0);

  // A module that is not where LT_CUDA_MODULE says.
  r = run_tool(dir, "lt-sample-image", job + " -d cuda", "LT_CUDA_MODULE='" + dir.file("none/liblt-cuda.so") + "' ");
  CHECK(r.exit_code != 0);
  CHECK(count(r.err, "\n") == 1);
  CHECK(r.err.find("the CUDA module liblt-cuda.so is not installed (looked for " + dir.file("none/liblt-cuda.so") +
                   ")") != std::string::npos);
}

TEST_CASE("neither liblt.so.0 nor a tool needs libmpi: ldd lists none, and a run outside mpirun loads none") {
  TempDir dir;
  std::vector<std::string> files = {LT_SHARED_LIBRARY};
  for (const char* tool : kTools) files.push_back(std::string(LT_BIN_DIR) + "/" + tool);
  if (std::filesystem::exists(std::string(LT_BIN_DIR) + "/lt-server")) files.push_back(std::string(LT_BIN_DIR) + "/lt-server");
  for (const std::string& file : files) {
    const CommandResult r = run_program(dir, "ldd", file);
    INFO(file << ": " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("libopenblas") != std::string::npos);  // ldd did list the libraries
    CHECK(r.out.find("libmpi") == std::string::npos);
    CHECK(r.out.find("libopen-") == std::string::npos);  // Open MPI's own (libopen-pal, libopen-rte)
  }
  // The module beside liblt.so.0, where a build with MPI puts it, is what needs it.
  const std::string module = std::filesystem::path(LT_SHARED_LIBRARY).parent_path() / "liblt-mpi.so";
  if (std::filesystem::exists(module)) {
    const CommandResult r = run_program(dir, "ldd", module);
    INFO(r.out);
    CHECK(r.out.find("libmpi") != std::string::npos);
  }

  // LD_DEBUG=files names every library as the loader opens it, dlopen included.
  const std::string run = "--task copy --layers 1 --d-model 16 --heads 2 -b 2 --steps 1 -q -t 1 -o '" +
                          dir.file("copy.safetensors") + "'";
  CommandResult r = run_tool(dir, "lt-train", run, "LD_DEBUG=files ");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("libopenblas") != std::string::npos);
  CHECK(r.err.find("libmpi") == std::string::npos);

  // Started by a launcher, without the module: one line saying so.
  r = run_tool(dir, "lt-train", run, "OMPI_COMM_WORLD_SIZE=2 LT_MPI_MODULE='" + dir.file("none/liblt-mpi.so") + "' ");
  CHECK(r.exit_code != 0);
  CHECK(count(r.err, "\n") == 1);
  if (std::filesystem::exists(module))
    CHECK(r.err.find("started by an MPI launcher (OMPI_COMM_WORLD_SIZE is set), but the MPI module liblt-mpi.so is not "
                     "installed (looked for " + dir.file("none/liblt-mpi.so") + ")") != std::string::npos);
  else
    CHECK(r.err.find("built without MPI") != std::string::npos);
}

TEST_CASE("beside busy processes a tool waits passively, its libraries initialised once") {
  TempDir dir;
  const BusyLoops busy(2);
  // libgomp prints its settings when it initialises: the re-execution that
  // sets them happens before any library's constructor.
  CommandResult r = run_tool(dir, "lt-sample-image", "--help", "OMP_DISPLAY_ENV=verbose ");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(count(r.err, "OPENMP DISPLAY ENVIRONMENT BEGIN") == 1);
  CHECK(r.err.find("GOMP_SPINCOUNT = '0'") != std::string::npos);
  // Left to libgomp's defaults, it would spin.
  r = run_tool(dir, "lt-sample-image", "--help", "LT_NO_REEXEC=1 OMP_DISPLAY_ENV=verbose ");
  CHECK(count(r.err, "OPENMP DISPLAY ENVIRONMENT BEGIN") == 1);
  CHECK(r.err.find("GOMP_SPINCOUNT = '0'") == std::string::npos);
}

TEST_CASE("a reader of a tool's output, busy starting beside it, is not load") {
  // `lt-asr ... | python3 ...`: the reader runs its own start-up just when
  // the tool looks at the machine, then waits on the pipe. Here it spins
  // for a moment before it reads. The control is the same tool writing to
  // /dev/null just before and after: under another load (another test)
  // both wait passively, and the pair is tried again. A load that comes
  // and goes between the three can still make one pair disagree, so it
  // takes three such pairs to fail.
  TempDir dir;
  const std::string tool = std::string(LT_BIN_DIR) + "/lt-sample-image", err = dir.file("err");
  auto passive = [&](const std::string& to) {
    const std::string cmd = "OMP_DISPLAY_ENV=verbose '" + tool + "' --help 2>'" + err + "' " + to;
    REQUIRE(std::system(cmd.c_str()) == 0);
    return read_text(err).find("GOMP_SPINCOUNT = '0'") != std::string::npos;
  };
  const std::string busy_reader = "| sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; cat >/dev/null'";
  int disagreed = 0;
  for (int attempt = 0; attempt < 12 && disagreed < 3; ++attempt) {
    if (passive(">/dev/null")) continue;
    if (!passive(busy_reader)) return;
    if (passive(">/dev/null")) continue;  // a load came meanwhile
    ++disagreed;
  }
  if (disagreed == 3) FAIL("the tool waited passively because of its output's reader, three times, on an idle machine");
  WARN("the machine stayed busy: no idle moment to compare");
}
