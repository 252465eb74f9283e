// scripts/speech/side_by_side.py: its row for a manifest holds the PER and
// WER lt-asr itself reports, offline and with --stream, with the shipped
// models and lt-asr's defaults.
#include <regex>

#include "apps/cli.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// lt-asr's summary line's PER and WER.
std::pair<double, double> summary(const std::string& err) {
  std::smatch m;
  REQUIRE(std::regex_search(err, m, std::regex("lt-asr: PER ([0-9.]+)% .*WER ([0-9.]+)%")));
  return {std::stod(m[1]), std::stod(m[2])};
}
}  // namespace

TEST_CASE("side_by_side.py reports lt-asr's own PER and WER, offline and streaming") {
  TempDir tmp;
  std::string manifest = "path\twords\n", inputs;
  for (const char* text : {"what time is it", "the weather is nice today"}) {
    const std::string wav = tmp.file(std::to_string(inputs.size()) + ".wav");
    REQUIRE(std::system(("espeak-ng -v en-us -w '" + wav + "' '" + text + "' 2>/dev/null").c_str()) == 0);
    manifest += wav + "\t" + text + "\n";
    inputs += " '" + wav + "'";
  }
  write_text(tmp.file("set.tsv"), manifest);
  const std::string lt_asr = std::string(LT_BIN_DIR) + "/lt-asr";
  const CommandResult table =
      run_program(tmp, "python3", "'" + std::string(LT_SCRIPTS_DIR) + "/speech/side_by_side.py' --lt '" + lt_asr +
                                      "' --no-pocketsphinx '" + tmp.file("set.tsv") + "' -- -t 1",
                  "env -u LT_WEIGHTS ");
  INFO(table.out << table.err);
  REQUIRE(table.exit_code == 0);
  std::smatch row;
  REQUIRE(std::regex_search(table.out, row,
                            std::regex("\\| set.tsv \\| 2 \\| ([0-9.]+)% \\| ([0-9.]+)% \\| ([0-9.]+)% \\| ([0-9.]+)% \\|")));
  for (int stream = 0; stream < 2; ++stream) {
    const CommandResult r = run_tool(tmp, "lt-asr", std::string("--words -t 1 --ref '") + tmp.file("set.tsv") + "'" +
                                                        (stream ? " --stream" : "") + inputs, "env -u LT_WEIGHTS ");
    REQUIRE(r.exit_code == 0);
    const auto [per, wer] = summary(r.err);
    CHECK(std::stod(row[1 + 2 * stream]) == per);
    CHECK(std::stod(row[2 + 2 * stream]) == wer);
  }
}
