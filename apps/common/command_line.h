// CLI11 glue shared by the tools: a parse error is one line "tool: ..." on
// stderr with exit status 2 (CLI11 alone prints two lines, without the
// tool's name), and whole-number checks whose messages name the bad value
// (CLI11's PositiveNumber answers "-n abc" with a range up to 1.8e308).
#pragma once
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <string>

namespace lt::app {

// Accepts whole numbers >= min.
inline CLI::Validator whole_number(int64_t min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size() || v < min)
          return "expected a whole number >= " + std::to_string(min) + ", got '" + s + "'";
        return "";
      },
      "INT>=" + std::to_string(min));
}
inline const CLI::Validator kPositive = whole_number(1), kNonNegative = whole_number(0);

// Parses argv; returns -1 to go on, or the status to exit with (0 after --help).
inline int parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::cerr << tool << ": " << what << " (see --help)\n";
    return 2;
  }
}

}  // namespace lt::app
