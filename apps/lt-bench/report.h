// Benchmark rows and their output formats (md, csv, json, jsonl), in the
// manner of llama-bench: every row carries the build and machine it ran on.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lt::bench {

// mean and sample standard deviation of repeated measurements.
struct Stats {
  double mean = 0, stddev = 0;
  static Stats of(const std::vector<double>& xs) {
    Stats s;
    if (xs.empty()) return s;
    for (double x : xs) s.mean += x;
    s.mean /= double(xs.size());
    for (double x : xs) s.stddev += (x - s.mean) * (x - s.mean);
    s.stddev = xs.size() > 1 ? std::sqrt(s.stddev / double(xs.size() - 1)) : 0.0;
    return s;
  }
};

// One row: ordered (column, value) pairs; numbers stay numbers in JSON.
class Row {
 public:
  Row& set(const std::string& key, nlohmann::json value) {
    for (auto& kv : fields_)
      if (kv.first == key) {
        kv.second = std::move(value);
        return *this;
      }
    fields_.emplace_back(key, std::move(value));
    return *this;
  }
  const std::vector<std::pair<std::string, nlohmann::json>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, nlohmann::json>> fields_;
};

// Build and machine columns shared by every benchmark, with the OpenMP wait
// policy and the busy processes beside the run.
Row environment_row(const std::string& device, int threads);
void set_background_load(int k);
int background_load();

// Writes rows as they come (jsonl, csv) or all at the end (md, json).
class Writer {
 public:
  explicit Writer(std::string format);
  void add(const Row& row);
  void finish();
  // "12.3 ± 0.4" for md; md columns given as (mean key, stddev key) are merged.
  static std::string plus_minus(double mean, double stddev);

 private:
  std::string format_;
  std::vector<Row> rows_;
  bool header_done_ = false;
};

}  // namespace lt::bench
