// A run's one view of the training loop's events, for every task: the
// progress line on stderr, evaluations as lines, and the JSON-lines log.
// Image tasks speak in bits/dim, categorical ones add accuracy, speech PER.
#pragma once
#include <cmath>
#include <cstdio>
#include <functional>

#include "metrics_log.h"
#include "train/progress.h"
#include "train/training_loop.h"

namespace lt {

inline std::function<void(const TrainEvent&)> report_events(MetricsLog& log, Progress& progress, bool bits,
                                                            bool quiet) {
  auto avg = std::make_shared<std::pair<double, double>>(0.0, 0.0);  // smoothed loss and accuracy
  auto seen = std::make_shared<int64_t>(0);
  return [&log, &progress, bits, quiet, avg, seen](const TrainEvent& e) {
    const double ln2 = std::log(2.0);
    nlohmann::json j = {{"step", e.step_index}, {"epoch", e.epoch}};
    if (e.kind == TrainEvent::step) {
      const double k = *seen == 0 ? 1.0 : 0.02;
      avg->first += k * (e.loss - avg->first);
      avg->second += k * (e.accuracy - avg->second);
      ++*seen;
      j.update({{"event", "train"}, {"loss", e.loss}, {"lr", e.lr}, {"examples_per_s", e.examples_per_s}});
      if (bits) j["bits_per_dim"] = e.loss / ln2;
      if (e.accuracy >= 0) j["accuracy"] = e.accuracy;
      char text[160];
      if (bits)
        std::snprintf(text, sizeof text, "loss %.4f bpd %.4f lr %.2g %.1f ex/s epoch %.2f", avg->first,
                      avg->first / ln2, e.lr, e.examples_per_s, e.epoch);
      else if (e.accuracy >= 0)
        std::snprintf(text, sizeof text, "loss %.4f acc %.3f lr %.2g %.0f ex/s epoch %.2f", avg->first,
                      avg->second, e.lr, e.examples_per_s, e.epoch);
      else
        std::snprintf(text, sizeof text, "loss %.4f lr %.2g %.0f ex/s epoch %.2f", avg->first, e.lr,
                      e.examples_per_s, e.epoch);
      progress.update(e.step_index, text);
    } else if (e.kind == TrainEvent::eval) {
      j["event"] = "eval";
      if (bits) j["test_bits_per_dim"] = e.loss / ln2;
      else j["test_loss"] = e.loss;
      if (e.accuracy >= 0) j["test_accuracy"] = e.accuracy;
      if (e.error_rate >= 0) j["test_per"] = e.error_rate;
      progress.finish();
      if (!quiet && bits) std::fprintf(stderr, "step %lld: test %.4f bits/dim\n", (long long)e.step_index, e.loss / ln2);
      if (!quiet && !bits && e.error_rate >= 0)
        std::fprintf(stderr, "step %lld: test loss %.4f PER %.2f%%\n", (long long)e.step_index, e.loss, 100 * e.error_rate);
      else if (!quiet && !bits)
        std::fprintf(stderr, "step %lld: test loss %.4f accuracy %.4f\n", (long long)e.step_index, e.loss, e.accuracy);
    } else if (e.kind == TrainEvent::micro_batch) {
      j.update({{"event", "micro_batch"}, {"rows", e.rows}});
      progress.finish();
      if (!quiet)
        std::fprintf(stderr, "step %lld: the batch does not fit the device's memory; passes of %lld rows from here on\n",
                     (long long)e.step_index + 1, (long long)e.rows);
    } else {
      j.update({{"event", "checkpoint"}, {"path", e.path}});
    }
    log.write(j);
  };
}

}  // namespace lt
