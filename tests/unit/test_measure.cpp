#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "common/measure.hpp"
#include "common/rotation.hpp"

using namespace opbench;

TEST_CASE("a steady operation stops at the minimum sample count") {
  MeasureOptions o;
  o.warmup_iters = 3;
  o.warmup_time_s = 0;
  o.min_samples = 5;
  o.min_time_s = 0;
  int calls = 0, prepares = 0;
  auto m = measure(
      o,
      [&] {
        ++calls;
        return 100.0;
      },
      [&] { ++prepares; });
  CHECK(m.warmup_runs == 3);
  CHECK(m.samples_us.size() == 5);
  CHECK(calls == 8);
  CHECK(prepares == 8);
  CHECK(m.stats.mean == 100.0);
  CHECK_FALSE(m.noisy);
  CHECK(noise_note(m, o).empty());
}

TEST_CASE("a noisy operation stops at max_samples and says so") {
  MeasureOptions o;
  o.warmup_iters = 0;
  o.warmup_time_s = 0;
  o.min_samples = 4;
  o.max_samples = 10;
  o.min_time_s = 0;
  o.max_noise = 0.01;
  int i = 0;
  auto m = measure(o, [&] { return (i++ % 2) ? 50.0 : 150.0; });
  CHECK(m.samples_us.size() == 10);
  CHECK(m.noisy);
  CHECK_THAT(noise_note(m, o), Catch::StartsWith("noisy (rse"));
}

TEST_CASE("measurement options are validated") {
  MeasureOptions o;
  o.min_samples = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--min-samples"));
  o = MeasureOptions{};
  o.max_noise = 1.5;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--max-noise"));
  o = MeasureOptions{};
  o.max_samples = 2;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--max-samples"));
}

TEST_CASE("rotation covers 4x the cache") {
  auto plan = plan_rotation(10 << 20, 32 << 20, 1ull << 40);  // 128 MiB / 10 MiB -> 13 sets
  CHECK(plan.sets == 13);
  CHECK(plan.working_set_bytes == 13 * (10 << 20));
  CHECK(plan_rotation(1 << 30, 32 << 20, 1ull << 40).sets == 1);
  CHECK(plan_rotation(10 << 20, 32 << 20, 25 << 20).sets == 2);  // only two fit the budget
  CHECK_FALSE(plan_rotation(10 << 20, 32 << 20, 5 << 20).fits);
  CHECK(plan_rotation(10 << 20, 0, 1ull << 40).sets == 1);  // --cold: one set
  CHECK(human_bytes(1536) == "1.5 KiB");
  CHECK(human_bytes(3.0 * (1 << 30)) == "3.0 GiB");
}
