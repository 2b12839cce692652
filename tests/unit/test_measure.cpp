#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/int_math.hpp"
#include "common/long_case_notice.hpp"
#include "common/measure.hpp"
#include "common/rotation.hpp"

using namespace opbench;

namespace {

// Sets (or, with nullptr, unsets) an environment variable for a scope, and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("a steady operation stops at the minimum sample count") {
  const MeasureOptions o{.warmup_iters = 3, .warmup_time_s = 0, .min_samples = 5, .min_time_s = 0};
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
  const MeasureOptions o{.warmup_iters = 0,
                         .warmup_time_s = 0,
                         .min_samples = 4,
                         .max_samples = 10,
                         .min_time_s = 0,
                         .max_noise = 0.01};
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

TEST_CASE("a long run on a warm provider is its own warm-up") {
  const MeasureOptions o{.warmup_time_s = 0, .min_samples = 3, .min_time_s = 0};  // 1 warm-up run
  int calls = 0;
  auto sample = [&] {
    ++calls;
    return 100.0;
  };
  MeasureHints cold{5.0, false};  // first case: library and buffers not warm yet
  auto m = measure(o, sample, {}, cold);
  CHECK(m.warmup_runs == 1);
  CHECK_FALSE(m.warmup_skipped);
  CHECK(m.warmup_us == std::vector<double>{100.0});
  calls = 0;
  MeasureHints warm_long{5.0, true};  // 5 s expected, over the 1 s threshold
  m = measure(o, sample, {}, warm_long);
  CHECK(m.warmup_skipped);
  CHECK(m.warmup_runs == 0);
  CHECK(calls == 3);
  MeasureHints warm_short{0.5, true};  // under the threshold: warm up as usual
  m = measure(o, sample, {}, warm_short);
  CHECK_FALSE(m.warmup_skipped);
  CHECK(m.warmup_runs >= 1);
}

TEST_CASE("the stop rule: minimums first, then precision, budgets last") {
  MeasureOptions o{
      .min_samples = 5, .max_samples = 8, .min_time_s = 0.2, .max_time_s = 2, .max_noise = 0.01};
  std::vector<double> steady(5, 100.0);
  CHECK_FALSE(enough_samples(steady, 0.1, o));  // min_time not reached
  CHECK(enough_samples(steady, 0.2, o));        // rse 0 < 1%
  std::vector<double> four(4, 100.0);
  CHECK_FALSE(enough_samples(four, 1.0, o));                     // min_samples not reached
  CHECK(enough_samples(std::vector<double>(3, 100.0), 2.0, o));  // max_time: 3 is the floor
  CHECK_FALSE(enough_samples(std::vector<double>(2, 100.0), 2.0, o));
  std::vector<double> spread{50, 150, 50, 150, 50, 150, 50};
  CHECK_FALSE(enough_samples(spread, 1.0, o));  // rse 15% > 1%
  spread.push_back(150);
  CHECK(enough_samples(spread, 1.0, o));  // max_samples
}

TEST_CASE("per-backend defaults, and flags on top of them") {
  CHECK(measure_defaults(MeasureProfile::cpu).min_samples == 5);
  CHECK(measure_defaults(MeasureProfile::gpu).min_samples == 10);
  CHECK(measure_defaults(MeasureProfile::gpu).max_time_s == 1.0);
  CHECK(measure_defaults(MeasureProfile::collective).min_samples == 3);
  CHECK(measure_defaults(MeasureProfile::collective).warmup_iters == 0);
  MeasureOverrides v;
  v.max_noise = 0.05;
  CHECK(resolve(MeasureProfile::gpu, v).max_noise == 0.05);
  CHECK(resolve(MeasureProfile::gpu, v).min_samples == 10);
  // --max-samples 2 lowers the profile's minimum of 10 instead of failing on it
  v.max_samples = 2;
  CHECK(resolve(MeasureProfile::gpu, v).min_samples == 2);
  MeasureOverrides long_min;
  long_min.min_time_s = 5;  // over the CPU's 2 s maximum: the maximum follows
  CHECK(resolve(MeasureProfile::cpu, long_min).max_time_s == 5);
  v.min_samples = 4;  // but an explicit contradiction names the flag
  CHECK_THROWS_WITH(resolve(MeasureProfile::gpu, v), Catch::Contains("--max-samples"));
}

TEST_CASE("a clock under 75% of the maximum is a throttled note") {
  Measurement m;
  CHECK(throttle_note(m, 1980).empty());  // not read: nothing to say
  m.sm_clock_before_mhz = 1980;
  m.sm_clock_after_mhz = 1500;  // 75.8%
  CHECK(throttle_note(m, 1980).empty());
  m.sm_clock_after_mhz = 1400;  // 70.7%
  CHECK(throttle_note(m, 1980) ==
        "throttled (SM clock 1400 MHz, below 75% of the 1980 MHz maximum)");
}

// On a VM whose sysfs lists no CPU cache (this project's CI machine), the cache size read 0 and
// a 6 MiB operator ran from the cache at 87 GB/s: the rotation needs a figure on every machine.
TEST_CASE("the CPU cache that rotation defeats is known even where sysfs names none") {
  const ScopedEnv unset("OPBENCH_CPU_CACHE_BYTES", nullptr);  // the suite sets a small one
  const std::uint64_t evict = cpu_cache_bytes_to_evict();
  CHECK(evict >= std::uint64_t{1} << 20);
  if (cpu_last_level_cache_bytes() > 0) CHECK(evict == cpu_last_level_cache_bytes());
  if (cpu_last_level_cache_bytes() == 0) CHECK(evict == std::uint64_t{64} << 20);
  CHECK(cpu_cache_flush_bytes() == 2 * evict);
  const auto plan = plan_rotation(6 << 20, evict, 1ull << 40);
  CHECK(plan.sets >= 2);
  CHECK(plan.working_set_bytes >= static_cast<std::int64_t>(4 * evict));
}

TEST_CASE("OPBENCH_CPU_CACHE_BYTES overrides the cache; a value that is not a size is bad input") {
  {
    const ScopedEnv given("OPBENCH_CPU_CACHE_BYTES", "4M");
    CHECK(cpu_cache_bytes_to_evict() == std::uint64_t{4} << 20);
    CHECK(cpu_cache_flush_bytes() == std::uint64_t{8} << 20);
  }
  {
    const ScopedEnv given("OPBENCH_CPU_CACHE_BYTES", "1048576");
    CHECK(cpu_cache_bytes_to_evict() == std::uint64_t{1} << 20);
  }
  for (const char* bad : {"4 MiB", "-1", "0", "M", "4MB", "lots"}) {
    const ScopedEnv given("OPBENCH_CPU_CACHE_BYTES", bad);
    CHECK_THROWS_WITH(cpu_cache_bytes_to_evict(),
                      Catch::Contains("OPBENCH_CPU_CACHE_BYTES") && Catch::Contains(bad));
  }
}

TEST_CASE("integer rounding: ceil_div and align_up") {
  CHECK(ceil_div(0, 3) == 0);
  CHECK(ceil_div(7, 2) == 4);
  CHECK(ceil_div(8, 2) == 4);
  CHECK(ceil_div(250945664LL * 4, std::int64_t{1} << 28) == 4);  // the AdamW pass of 8B at tp 8
  CHECK(align_up(5, 4) == 8);
  CHECK(align_up(8, 4) == 8);
  CHECK(align_up(0, 256) == 0);
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

TEST_CASE("rotate or skip: sets by the bytes touched, capped by the bytes allocated, or a note") {
  // 4 MiB allocated per set of which 2 MiB is touched per sample; 8 MiB of cache: 32 / 2 = 16
  // sets wanted, the 40 MiB budget holds 10.
  auto r = plan_operand_rotation(4 << 20, 2 << 20, false, 8 << 20, 40 << 20, "host memory");
  REQUIRE(r.plan);
  CHECK(r.plan->sets == 10);
  CHECK(r.plan->working_set_bytes == 10 * (2 << 20));
  CHECK(std::string(r.cache) == "rotate");
  r = plan_operand_rotation(4 << 20, 2 << 20, true, 8 << 20, 40 << 20, "host memory");
  REQUIRE(r.plan);
  CHECK(r.plan->sets == 1);
  CHECK(std::string(r.cache) == "flush");
  r = plan_operand_rotation(4 << 20, 2 << 20, false, 8 << 20, 3 << 20, "device memory");
  CHECK_FALSE(r.plan);
  CHECK(r.skip_note == "needs 4.0 MiB of device memory for one set of operands; 3.0 MiB available");
  // A budget gone negative (shared operands larger than it) skips too.
  CHECK_FALSE(plan_operand_rotation(1, 1, false, 0, -5, "host memory").plan);
}

TEST_CASE(
    "around_sampling sees the measured region only: after the warm-up, after the last sample") {
  // The GPU providers read the SM clock here; read before the warm-up, it would catch the clock
  // still ramping up and write false 'throttled' notes.
  const MeasureOptions o{
      .warmup_iters = 3, .warmup_time_s = 0, .min_samples = 4, .max_samples = 4, .min_time_s = 0};
  std::vector<std::string> events;
  int calls = 0;
  measure(
      o,
      [&] {
        events.push_back(++calls <= 3 ? "warmup" : "sample");
        return 10.0;
      },
      {}, {}, [&](bool starting) { events.push_back(starting ? "start" : "end"); });
  const std::vector<std::string> want{"warmup", "warmup", "warmup", "start", "sample",
                                      "sample", "sample", "sample", "end"};
  CHECK(events == want);
}

TEST_CASE("measure: a case bound to take minutes is announced after its first run") {
  opbench::MeasureOptions o{
      .warmup_iters = 1, .warmup_time_s = 0, .min_samples = 5, .max_samples = 10, .max_time_s = 2};
  std::vector<double> said;  // run_s, case_s, runs
  opbench::ScopedLongCaseNotice notice([&](double run_s, double case_s, int runs) {
    said = {run_s, case_s, static_cast<double>(runs)};
  });
  // Runs of 40 s (as the sample reports them): 1 warm-up, then --max-time (2 s) cuts the 5
  // samples down to the 3 that give a spread: 4 runs, 160 s.
  opbench::measure(o, [] { return 40e6; });
  REQUIRE(said.size() == 3);
  CHECK(said[0] == Approx(40.0));
  CHECK(said[1] == Approx(160.0));
  CHECK(said[2] == 4);
  // Runs of 5 s with --max-time 100: all 5 samples fit the budget: 6 runs, 30 s, not above the
  // 30 s threshold, so nothing is said.
  said.clear();
  o.max_time_s = 100;
  opbench::measure(o, [] { return 5e6; });
  CHECK(said.empty());
  // 6 s runs: 36 s, said.
  opbench::measure(o, [] { return 6e6; });
  REQUIRE(said.size() == 3);
  CHECK(said[1] == Approx(36.0));
  CHECK(said[2] == 6);
}
