#include "report.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "backend/blas_description.h"
#include "backend/device.h"
#include "common/error.h"

namespace lt::bench {

static int g_background_load = 0;
void set_background_load(int k) { g_background_load = k; }
int background_load() { return g_background_load; }

Row environment_row(const std::string& device, int threads) {
  Row r;
  r.set("device", device);
  r.set("threads", threads);
  r.set("cpu", device_description(Device::cpu));
  r.set("blas", blas_description());
  r.set("gpu", device == "cuda" ? device_description(Device::cuda) : std::string("none"));
  r.set("commit", build_commit());
  r.set("cuda_build", built_with_cuda());
  // How OpenMP's threads wait (the tools' default, or what the user set) and
  // how many busy processes shared the machine (--background-load).
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  r.set("omp_wait", spin ? std::string("spincount ") + spin : policy ? policy : "default");
  r.set("background_load", background_load());
  return r;
}

Writer::Writer(std::string format) : format_(std::move(format)) {
  if (format_ != "md" && format_ != "csv" && format_ != "json" && format_ != "jsonl")
    throw Error("unknown output format '" + format_ + "' (expected md, csv, json or jsonl)");
}

static std::string cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    std::ostringstream s;
    s.precision(4);
    s << v.get<double>();
    return s.str();
  }
  return v.dump();
}

static std::string csv_cell(const nlohmann::json& v) {
  std::string s = cell(v);
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string Writer::plus_minus(double mean, double stddev) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(mean >= 100 ? 1 : mean >= 1 ? 3 : 5);
  s << mean << " ± " << stddev;
  return s.str();
}

void Writer::add(const Row& row) {
  if (format_ == "jsonl") {
    nlohmann::json j = nlohmann::json::object();
    for (auto& [k, v] : row.fields()) j[k] = v;
    std::cout << j.dump() << std::endl;
  } else if (format_ == "csv") {
    if (!header_done_) {
      std::string h;
      for (auto& kv : row.fields()) h += (h.empty() ? "" : ",") + kv.first;
      std::cout << h << "\n";
      header_done_ = true;
    }
    std::string line;
    bool first = true;
    for (auto& kv : row.fields()) line += (first ? "" : ",") + csv_cell(kv.second), first = false;
    std::cout << line << std::endl;
  } else {
    rows_.push_back(row);
  }
}

void Writer::finish() {
  if (format_ == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const Row& r : rows_) {
      nlohmann::json j = nlohmann::json::object();
      for (auto& [k, v] : r.fields()) j[k] = v;
      arr.push_back(j);
    }
    std::cout << arr.dump(2) << std::endl;
  } else if (format_ == "md" && !rows_.empty()) {
    // Machine columns are the same in every row: print them once above the table.
    const std::vector<std::string> machine{"cpu", "blas", "gpu", "commit", "cuda_build"};
    auto is_machine = [&](const std::string& k) {
      for (auto& m : machine)
        if (m == k) return true;
      return false;
    };
    for (auto& [k, v] : rows_[0].fields())
      if (is_machine(k)) std::cout << "- " << k << ": " << cell(v) << "\n";
    std::cout << "\n|";
    for (auto& [k, v] : rows_[0].fields())
      if (!is_machine(k)) std::cout << " " << k << " |";
    std::cout << "\n|";
    for (auto& [k, v] : rows_[0].fields())
      if (!is_machine(k)) std::cout << (v.is_number() ? " ---: |" : " --- |");
    std::cout << "\n";
    for (const Row& r : rows_) {
      std::cout << "|";
      for (auto& [k, v] : r.fields())
        if (!is_machine(k)) std::cout << " " << cell(v) << " |";
      std::cout << "\n";
    }
    std::cout.flush();
  }
}

}  // namespace lt::bench
