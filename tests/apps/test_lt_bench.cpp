// lt-bench end to end on sizes that run in a second: every output format
// parses, rows carry the machine and the measured fields, the measured values
// behave as the paper says (linear memory in N, a KV cache larger than the
// recurrent state), and bad flags fail with one line.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "backend/device.h"
#include "ops/packed_linear.h"  // cpu_has_bf16

using namespace lt;
using namespace lt::test;

namespace {

CommandResult lt_bench(const TempDir& dir, const std::string& args) { return run_tool(dir, "lt-bench", args); }

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

void check_one_line_error(const CommandResult& r, const std::string& what) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("lt-bench: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(what) != std::string::npos);
}

const std::string kTinyModel = " --layers 1 --d-model 16 --heads 2 -t 1 ";

}  // namespace

TEST_CASE("lt-bench attention writes JSON rows whose peak memory grows linearly with N") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "attention -a causal-linear softmax --min-length 256 --max-length 1024 --tokens 2048 "
                                  "-r 2 --heads 2 --head-dim 8 -t 1 -q -f json");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.size() == 6);  // 3 lengths x 2 kinds
  std::map<std::pair<std::string, int64_t>, double> mb;
  for (const auto& row : rows) {
    for (const char* key : {"cpu", "blas", "commit", "threads", "ms_per_sample", "ms_per_sample_std", "us_per_token"})
      CHECK_MESSAGE(row.contains(key), key);
    CHECK(row["device"] == "cpu");
    CHECK(row["ms_per_sample"].get<double>() > 0);
    CHECK(row["batch"].get<int64_t>() * row["N"].get<int64_t>() == 2048);
    mb[{row["attention"].get<std::string>(), row["N"].get<int64_t>()}] = row["peak_mb_per_sample"].get<double>();
  }
  // Per sample, causal-linear memory grows as N (x4 from 256 to 1024), softmax faster (its L x L part as N^2).
  const double lin = mb[{"causal-linear", 1024}] / mb[{"causal-linear", 256}];
  CHECK(lin > 3.5);
  CHECK(lin < 4.5);
  CHECK(mb[{"softmax", 1024}] / mb[{"softmax", 256}] > 6);
}

TEST_CASE("lt-bench attention has favor rows (FAVOR+ features) in the table beside the others, with their width") {
  TempDir dir;
  const std::string sizes = " --min-length 64 --max-length 128 --tokens 256 -r 1 --heads 2 --head-dim 8 -t 1 -q ";
  CommandResult r = lt_bench(dir, "attention -a linear favor causal-favor" + sizes + "-f json");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.size() == 6);  // 2 lengths x 3 kinds
  for (const auto& row : rows) {
    CHECK(row["ms_per_sample"].get<double>() > 0);
    CHECK(row["peak_mb_per_sample"].get<double>() > 0);
    // elu + 1 keeps E = 8; favor's default is the Performer's E ln E = 16.6, rounded up to even.
    CHECK(row["features"] == (row["attention"] == "linear" ? 8 : 18));
  }
  CHECK(rows[1]["attention"] == "favor");
  CHECK(rows[2]["attention"] == "causal-favor");
  for (const auto& row : rows) CHECK(row["tf32"] == false);
  // The tensor cores' TF32 is CUDA's: on the CPU attention is fp32.
  check_one_line_error(lt_bench(dir, "attention -a causal-linear --tf32" + sizes), "--tf32 needs -d cuda");

  // The markdown table: a header, a separator and a line per row, all with the same columns.
  r = lt_bench(dir, "attention -a softmax favor" + sizes + "-f md");
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out);
  std::vector<std::string> table;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("|", 0) == 0) table.push_back(line);
  REQUIRE(table.size() == 6);
  const auto bars = [](const std::string& line) { return std::count(line.begin(), line.end(), '|'); };
  for (const std::string& line : table) CHECK(bars(line) == bars(table[0]));
  CHECK(r.out.find("| favor |") != std::string::npos);
}

TEST_CASE("lt-bench attention has Reformer rows (lsh-1, causal-lsh-4) whose peak memory grows linearly with N") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "attention -a lsh-1 causal-lsh-4 --min-length 256 --max-length 1024 --tokens 2048 "
                                  "-r 1 --heads 2 --head-dim 8 -t 1 -q -f json");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.size() == 6);  // 3 lengths x 2 kinds
  std::map<std::pair<std::string, int64_t>, double> mb;
  for (const auto& row : rows) {
    CHECK(row["ms_per_sample"].get<double>() > 0);
    mb[{row["attention"].get<std::string>(), row["N"].get<int64_t>()}] = row["peak_mb_per_sample"].get<double>();
  }
  for (const char* kind : {"lsh-1", "causal-lsh-4"}) {
    INFO(kind);
    const double growth = mb[{kind, 1024}] / mb[{kind, 256}];
    CHECK(growth > 3.5);
    CHECK(growth < 4.5);
  }
}

TEST_CASE("lt-bench generate writes jsonl rows with images_per_s, and the KV cache outgrows the recurrent state") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "generate" + kTinyModel + "-b 1 3 -a linear softmax --steps 8 -q -f jsonl");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> rows = json_lines(r.out);
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) {
    CHECK(row["images_per_s"].get<double>() > 0);
    CHECK(row["layers"] == 1);
    CHECK(row["d_model"] == 16);
    CHECK(row["timed_steps"] == 8);
    CHECK(row["subpixels"] == 784);
  }
  CHECK(rows[0]["attention"] == "linear");
  CHECK(rows[2]["attention"] == "softmax-kv");
  // Per image: d state entries x E for linear, 2 x 783 x d for the cache.
  CHECK(rows[2]["state_mb_per_image"].get<double>() > 10 * rows[0]["state_mb_per_image"].get<double>());
  CHECK(rows[0]["products"] == "packed");
  CHECK(rows[0]["precision"] == "fp32");

  CommandResult blas = lt_bench(dir, "generate" + kTinyModel + "-b 2 -a linear --steps 2 --openblas -q -f json");
  INFO("stderr: " << blas.err);
  REQUIRE(blas.exit_code == 0);
  nlohmann::json blas_rows = nlohmann::json::parse(blas.out);
  REQUIRE(blas_rows.size() == 1);
  CHECK(blas_rows[0]["products"] == "openblas");
  CHECK(blas_rows[0]["images_per_s"].get<double>() > 0);
}

TEST_CASE("lt-bench generate times LSH sampling by recomputation and says so in its rows") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "generate" + kTinyModel + "-b 2 -a lsh-1 lsh-4 linear --steps 4 -q -f jsonl");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> rows = json_lines(r.out);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["attention"] == "lsh-1");
  CHECK(rows[1]["attention"] == "lsh-4");
  for (int i : {0, 1}) {
    CHECK(rows[i]["sampling"] == "recompute");
    CHECK(rows[i]["state"] == "none");
    CHECK(rows[i]["state_mb_per_image"] == 0.0);
    CHECK(rows[i]["images_per_s"].get<double>() > 0);
    CHECK(rows[i]["peak_mb"].get<double>() > 0);
  }
  CHECK(rows[2]["sampling"] == "recurrent");
  // (How much slower recomputation is belongs to docs/benchmarks.md, not to a
  // timed test: that it recomputes the prefix is pinned by the LSH sampling
  // test against the parallel pass.)
  check_one_line_error(lt_bench(dir, "generate -a lsh-0 -q"), "lsh-0");
  check_one_line_error(lt_bench(dir, "generate -a reformer -q"), "reformer");
}

TEST_CASE("lt-bench train writes a csv header and a row per shape") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "train" + kTinyModel + "-b 2 -r 1 -q -f csv");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out);
  std::string header, row, extra;
  REQUIRE(std::getline(in, header));
  REQUIRE(std::getline(in, row));
  CHECK_FALSE(std::getline(in, extra));
  for (const char* key : {"examples_per_s", "dense_gflops", "sgemm_gflops", "dense_fraction", "replicas"})
    CHECK_MESSAGE(header.find(key) != std::string::npos, key);
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));

  if (cpu_has_bf16()) {  // bf16 products: the rows say so
    r = lt_bench(dir, "train" + kTinyModel + "-b 2 -r 1 -q -f json --bf16");
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    nlohmann::json rows = nlohmann::json::parse(r.out);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["precision"] == "bf16");
    CHECK(rows[0]["examples_per_s"].get<double>() > 0);
  }
}

TEST_CASE("lt-bench speech writes a row per attention (and the Bi-LSTM) and frame rate, the softmax encoder slower per frame") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "speech --layers 1 --d-model 16 --heads 2 -t 1 -b 2 --frames 300 -r 1 -q -f json "
                                  "-a linear softmax causal-linear bilstm --lstm-layers 2 --lstm-hidden 8 "
                                  "--frame-stack 1 3 --hours 2");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.size() == 8);
  for (const auto& row : rows) {
    CHECK(row["ms_per_step"].get<double>() > 0);
    CHECK(row["positions"] == (row["frame_stack"] == 1 ? 300 : 100));
    // An epoch is the audio over the throughput: 2 h at audio_s_per_s.
    CHECK(row["epoch_s"].get<double>() == doctest::Approx(7200.0 / row["audio_s_per_s"].get<double>()).epsilon(1e-6));
  }
  CHECK(rows[0]["attention"] == "linear");
  CHECK(rows[4]["attention"] == "causal-linear");
  CHECK(rows[6]["attention"] == "bilstm");
  CHECK(rows[6]["layers"] == 2);
  CHECK(rows[6]["d_model"] == 16);  // both directions' 8
  check_one_line_error(lt_bench(dir, "speech -a quadratic -q"), "quadratic");
  check_one_line_error(lt_bench(dir, "speech --d-model 30 --heads 4 -q"), "--d-model");
}

TEST_CASE("lt-bench asr writes offline and stream rows per thread count, their parts adding up to the RTF") {
  TempDir dir;
  CommandResult r = lt_bench(dir, "asr --layers 1 --d-model 16 --heads 2 --seconds 3 --stream-seconds 12 "
                                  "--thread-counts 1 2 --ff-conv 5 -r 1 -q -f json");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) {
    const double parts = row["frontend_s"].get<double>() + row["encoder_s"].get<double>() + row["decoder_s"].get<double>();
    CHECK(parts > 0);
    CHECK(row["rtf"].get<double>() == doctest::Approx(parts / row["audio_s"].get<double>()).epsilon(1e-9));
  }
  CHECK(rows[0]["mode"] == "offline");
  CHECK(rows[0]["attention"] == "linear");
  CHECK(rows[0]["audio_s"] == 3.0);
  CHECK(rows[1]["threads"] == 2);
  CHECK(rows[0]["ff_conv"] == 5);
  CHECK(rows[2]["mode"] == "stream");
  CHECK(rows[2]["attention"] == "causal-linear");
  CHECK(rows[2]["ff_conv"] == 5);  // causal there
  CHECK(rows[2]["audio_s"].get<double>() == doctest::Approx(12.0).epsilon(0.01));
  CHECK(rows[2]["compute_ms_per_chunk_max"].get<double>() >= rows[2]["compute_ms_per_chunk"].get<double>());
  CHECK(rows[2]["rss_mb_at_10s"].get<double>() > 0);
  check_one_line_error(lt_bench(dir, "asr --mode batch -q"), "batch");
  check_one_line_error(lt_bench(dir, "asr --ff-conv 4 -q"), "odd");
}

TEST_CASE("lt-bench streams: batched rows carry the lag of settled phones, saturated rows the audio they got through") {
  TempDir dir;
  const CommandResult r =
      lt_bench(dir, "streams --mode batched saturated -n 3 --seconds 2 --arrival 0.5 --chunk-ms 30 -t 1 -q -f jsonl");
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<nlohmann::json> rows = json_lines(r.out);
  REQUIRE(rows.size() == 2);
  const nlohmann::json &paced = rows[0], &saturated = rows[1];
  CHECK(paced["mode"] == "batched");
  CHECK(paced["streams"] == 3);
  CHECK(paced["phones"].get<int64_t>() > 0);
  CHECK(paced["lag_max_ms"].get<double>() >= paced["lag_p95_ms"].get<double>());
  CHECK(paced["lag_bound_ms"].get<double>() == 600.0);  // --max-delay 0.5 s + 100 ms
  CHECK(paced["realtime"].is_boolean());
  CHECK(saturated["mode"] == "saturated");
  CHECK(saturated["streams"] == 3);
  // 2 s a stream in 30 ms pieces (480 samples, one position each): 66 steps after the warm-up.
  CHECK(saturated["audio_s"].get<double>() == doctest::Approx(3 * 66 * 480 / 16000.0));
  CHECK(saturated["positions"] == 3 * 66);
  const double wall = saturated["wall_s"].get<double>();
  REQUIRE(wall > 0);
  CHECK(saturated["realtime_streams"].get<double>() == doctest::Approx(saturated["audio_s"].get<double>() / wall));
  CHECK(saturated["us_per_position"].get<double>() == doctest::Approx(1e6 * wall / (3 * 66)));
  CHECK(saturated["realtime"] == (saturated["realtime_streams"].get<double>() >= 3));
  CHECK(saturated["encoder_share"].get<double>() > 0);
  CHECK(saturated["encoder_share"].get<double>() < 1);
  for (const nlohmann::json* row : {&paced, &saturated}) {  // lt-asr's search, as the rows say
    CHECK((*row)["beam"] == 64);
    CHECK((*row)["prune"].get<double>() == -10.0);
    CHECK((*row)["max_delay_s"].get<double>() == 0.5);
  }
  check_one_line_error(lt_bench(dir, "streams --mode fastest -q"), "fastest");
  check_one_line_error(lt_bench(dir, "streams --images 2 --mode saturated -q"), "--images runs --mode batched and alone");
  // Saturated streams all start at once: --arrival is no bound on --seconds then.
  const CommandResult quick = lt_bench(dir, "streams --mode saturated -n 2 --seconds 1 --chunk-ms 30 -t 1 -q -f jsonl");
  INFO("stderr: " << quick.err);
  REQUIRE(quick.exit_code == 0);
  CHECK(json_lines(quick.out).at(0)["positions"] == 2 * 33);
  check_one_line_error(lt_bench(dir, "streams --mode batched --seconds 2 --arrival 3 -q"), "--arrival");
  // The library's own error, read after the call that failed.
  const std::string missing = (dir.path / "no-such-model.safetensors").string();
  check_one_line_error(lt_bench(dir, "streams --mode saturated -n 2 --seconds 1 -q -m " + missing), missing + ": cannot open");
  check_one_line_error(lt_bench(dir, "streams -d cuda --mode processes -q"), "--mode processes runs lt-asr on the CPU");
  check_one_line_error(lt_bench(dir, "streams -d tpu -q"), "tpu");
  if (!cuda_available())
    check_one_line_error(lt_bench(dir, "streams -d cuda --mode saturated -n 2 --seconds 1 -q"), "cannot use device cuda");
}

TEST_CASE("lt-bench streams --images: a row per mode asked, every request served") {
  TempDir dir;
  for (const std::string modes : {"batched alone", "batched"}) {
    const CommandResult r = lt_bench(dir, "streams --images 4 --arrival 0.5 --mode " + modes + " -t 1 -q -f jsonl");
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const std::vector<nlohmann::json> rows = json_lines(r.out);
    REQUIRE(rows.size() == (modes == "batched" ? 1u : 2u));
    for (size_t i = 0; i < rows.size(); ++i) {
      const nlohmann::json& row = rows[i];
      CHECK(row["mode"] == (i == 0 ? "images batched" : "images alone"));
      CHECK(row["requests"] == 4);
      // From the first arrival to the last image takes at least any one request's wait.
      const double mean = row["latency_mean_s"].get<double>(), rate = row["images_per_s"].get<double>();
      CHECK(mean > 0);
      CHECK(rate > 0);
      CHECK(rate <= 4 / mean * (1 + 1e-9));
    }
  }
}

TEST_CASE("lt-bench refuses bad flags with one line") {
  TempDir dir;
  check_one_line_error(lt_bench(dir, "generate --shape imagenet -q"), "imagenet");
  check_one_line_error(lt_bench(dir, "generate -a linear -f xml -q"), "xml");
  check_one_line_error(lt_bench(dir, "train --shape mnist --d-model 30 --heads 4 -q"), "--d-model");
  check_one_line_error(lt_bench(dir, "attention -a quadratic -q"), "quadratic");
  check_one_line_error(lt_bench(dir, "attention -d tpu -q"), "tpu");
  check_one_line_error(lt_bench(dir, "generate -b 0 -q"), "expected a whole number >= 1, got '0'");
  check_one_line_error(lt_bench(dir, "generate --bogus -q"), "--bogus");
  check_one_line_error(lt_bench(dir, "generate --openblas --bf16 -q"), "--openblas");
  check_one_line_error(lt_bench(dir, "-q"), "subcommand");
}
