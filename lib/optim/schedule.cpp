// Learning-rate schedules: constant, step decay (torch MultiStepLR) and
// cosine annealing, each optionally after a linear warmup.
#include <algorithm>
#include <cmath>
#include <string>

#include "optim/optimizer.h"

namespace lt {

constexpr double kPi = 3.14159265358979323846;

float learning_rate(const Schedule& s, int64_t step) {
  check(step >= 0, "learning_rate: step must be >= 0, got " + std::to_string(step));
  double lr = s.lr;
  switch (s.kind) {
    case ScheduleKind::constant:
      break;
    case ScheduleKind::step_decay:
      for (int64_t milestone : s.milestones)
        if (step >= milestone) lr *= s.gamma;
      break;
    case ScheduleKind::cosine: {
      check(s.total_steps > s.warmup_steps,
            "learning_rate: a cosine schedule needs total_steps (" + std::to_string(s.total_steps) +
                ") > warmup_steps (" + std::to_string(s.warmup_steps) + ")");
      const double progress = std::min(
          1.0, double(std::max<int64_t>(step - s.warmup_steps, 0)) / double(s.total_steps - s.warmup_steps));
      lr = s.min_lr + 0.5 * (s.lr - s.min_lr) * (1 + std::cos(kPi * progress));
      break;
    }
  }
  if (step < s.warmup_steps) lr *= double(step + 1) / double(s.warmup_steps);
  return float(lr);
}

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "constant") return ScheduleKind::constant;
  if (name == "step") return ScheduleKind::step_decay;
  if (name == "cosine") return ScheduleKind::cosine;
  throw Error("unknown learning-rate schedule '" + name + "' (expected constant, step or cosine)");
}

}  // namespace lt
