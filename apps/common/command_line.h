// CLI11 glue shared by the tools: a parse error is one line "tool: ..." on
// stderr with exit status 2 (CLI11 alone prints two lines, without the
// tool's name), and number and path checks whose messages name the bad
// value (CLI11's PositiveNumber answers "-n abc" with a range up to 1.8e308,
// and its Range takes "nan").
#pragma once
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
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

// Accepts finite numbers in lo..hi (CLI::Range and CLI::PositiveNumber let
// "nan" through: every comparison with it is false).
inline CLI::Validator real_in(double lo, double hi) {
  auto text = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  const bool any_lo = lo == -std::numeric_limits<double>::max(), any_hi = hi == std::numeric_limits<double>::max();
  const std::string bounds = any_lo && any_hi ? ""
                             : any_hi         ? ">= " + text(lo)
                             : any_lo         ? "<= " + text(hi)
                                              : "in [" + text(lo) + " - " + text(hi) + "]";
  const std::string takes = "a finite number" + (bounds.empty() ? "" : " " + bounds);
  return CLI::Validator(
      [lo, hi, takes](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < lo || v > hi)
          return "expected " + takes + ", got '" + s + "'";
        return "";
      },
      bounds.empty() ? "FINITE" : "FLOAT " + bounds);
}
inline CLI::Validator real_at_least(double lo) { return real_in(lo, std::numeric_limits<double>::max()); }
inline const CLI::Validator kFinite = real_in(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
// Finite numbers above 0.
inline const CLI::Validator kPositiveReal = CLI::Validator(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || !(v > 0))
        return "expected a finite number > 0, got '" + s + "'";
      return "";
    },
    "FLOAT > 0");

// Accepts a decimal whole number in 0..2^64-1: CLI11 reads "-1" into an
// unsigned field as 2^64-1, and "010" as octal.
inline const CLI::Validator kUnsigned = CLI::Validator(
    [](std::string& s) -> std::string {
      uint64_t v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size())
        return "expected a whole number in 0..18446744073709551615, got '" + s + "'";
      return "";
    },
    "");

// Accepts any text but the empty one: a path given as "" is a mistake, not
// the default the option has when it is not given.
inline const CLI::Validator kNonEmpty = CLI::Validator(
    [](std::string& s) -> std::string { return s.empty() ? "expected a path, got ''" : ""; }, "");

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
