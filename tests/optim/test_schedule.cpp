#include <cmath>

#include "optim/optimizer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("constant and step-decay schedules") {
  Schedule constant;
  constant.lr = 3e-4f;
  CHECK(learning_rate(constant, 0) == 3e-4f);
  CHECK(learning_rate(constant, 123456) == 3e-4f);

  // The copy task: lr / 10 from update 3000 on (30 epochs of 100 updates).
  Schedule copy{ScheduleKind::step_decay, 1e-4f, 0, {3000}, 0.1f};
  CHECK(learning_rate(copy, 0) == doctest::Approx(1e-4).epsilon(1e-6));
  CHECK(learning_rate(copy, 2999) == doctest::Approx(1e-4).epsilon(1e-6));
  CHECK(learning_rate(copy, 3000) == doctest::Approx(1e-5).epsilon(1e-6));
  CHECK(learning_rate(copy, 90000) == doctest::Approx(1e-5).epsilon(1e-6));

  Schedule two{ScheduleKind::step_decay, 1.f, 0, {10, 20}, 0.5f};
  CHECK(learning_rate(two, 9) == 1.f);
  CHECK(learning_rate(two, 10) == 0.5f);
  CHECK(learning_rate(two, 25) == 0.25f);
}

TEST_CASE("cosine schedule with linear warmup") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Schedule s;
  s.kind = ScheduleKind::cosine;
  s.lr = float(rng.uniform(1e-4, 1e-2));
  s.min_lr = float(rng.uniform(0, 1e-5));
  s.warmup_steps = rng.integer(1, 100);
  s.total_steps = s.warmup_steps + rng.integer(1, 10000);
  const double pi = std::acos(-1.0);
  for (int i = 0; i < 200; ++i) {
    const int64_t t = rng.integer(0, s.total_steps + 50);
    double want;
    if (t < s.warmup_steps) {
      want = double(s.lr) * (t + 1) / s.warmup_steps;
    } else {
      double progress = std::min(1.0, double(t - s.warmup_steps) / double(s.total_steps - s.warmup_steps));
      want = s.min_lr + (double(s.lr) - s.min_lr) * (1 + std::cos(pi * progress)) / 2;
    }
    INFO("step " << t);
    CHECK(learning_rate(s, t) == doctest::Approx(want).epsilon(1e-6));
  }
  CHECK(learning_rate(s, s.warmup_steps) == doctest::Approx(s.lr).epsilon(1e-6));
  CHECK(learning_rate(s, s.total_steps) == doctest::Approx(s.min_lr).epsilon(1e-6));
}

TEST_CASE("schedule names parse and bad schedules say why") {
  CHECK(parse_schedule_kind("constant") == ScheduleKind::constant);
  CHECK(parse_schedule_kind("step") == ScheduleKind::step_decay);
  CHECK(parse_schedule_kind("cosine") == ScheduleKind::cosine);
  CHECK_THROWS_WITH_AS(parse_schedule_kind("linear"), doctest::Contains("unknown learning-rate schedule 'linear'"),
                       lt::Error);
  Schedule s;
  s.kind = ScheduleKind::cosine;
  s.warmup_steps = 10;
  s.total_steps = 10;
  CHECK_THROWS_WITH_AS(learning_rate(s, 0), doctest::Contains("total_steps (10) > warmup_steps (10)"), lt::Error);
}
