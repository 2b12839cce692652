#include "common/measure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/long_case_notice.hpp"
#include "common/timer.hpp"

namespace opbench {

void validate(const MeasureOptions& o) {
  auto check = [](bool ok, const char* flag, const std::string& why) {
    if (!ok) throw bad_input(fmt::format("--{}: {}", flag, why));
  };
  check(o.warmup_iters >= 0, "warmup", fmt::format("must be >= 0, got {}", o.warmup_iters));
  check(o.warmup_time_s >= 0 && std::isfinite(o.warmup_time_s), "warmup-time",
        "must be >= 0 seconds");
  check(o.min_samples >= 1, "min-samples", fmt::format("must be >= 1, got {}", o.min_samples));
  check(o.max_samples >= o.min_samples, "max-samples",
        fmt::format("must be >= --min-samples ({}), got {}", o.min_samples, o.max_samples));
  check(o.min_time_s >= 0 && std::isfinite(o.min_time_s), "min-time", "must be >= 0 seconds");
  check(o.max_time_s >= o.min_time_s && std::isfinite(o.max_time_s), "max-time",
        fmt::format("must be >= --min-time ({} s)", o.min_time_s));
  check(o.max_noise > 0 && o.max_noise < 1, "max-noise",
        fmt::format("must be in (0, 1), got {}", o.max_noise));
}

MeasureOptions measure_defaults(MeasureProfile profile) {
  switch (profile) {
    case MeasureProfile::cpu:
      break;  // the struct's defaults
    case MeasureProfile::gpu:
      return {.warmup_time_s = 0.1,
              .min_samples = 10,
              .max_samples = 10000,
              .min_time_s = 0.1,
              .max_time_s = 1.0};
    case MeasureProfile::collective:  // -w calls warm up instead of runs
      return {.warmup_iters = 0,
              .warmup_time_s = 0,
              .min_samples = 3,
              .max_samples = 100,
              .min_time_s = 0,
              .max_time_s = 1.0};
  }
  return {};
}

MeasureOptions resolve(MeasureProfile profile, const MeasureOverrides& v) {
  MeasureOptions o = measure_defaults(profile);
  if (v.warmup_iters) o.warmup_iters = *v.warmup_iters;
  if (v.warmup_time_s) o.warmup_time_s = *v.warmup_time_s;
  if (v.min_samples) o.min_samples = *v.min_samples;
  if (v.max_samples) o.max_samples = *v.max_samples;
  // A bound the user gave moves the profile's opposite bound with it, rather than failing on a
  // default the user never wrote (--max-samples 2 on a profile whose minimum is 5).
  // (Clamped to the valid range, so that a bad given bound is the one the error names.)
  if (v.max_samples && !v.min_samples)
    o.min_samples = std::min(o.min_samples, std::max(1, *v.max_samples));
  if (v.min_samples && !v.max_samples) o.max_samples = std::max(o.max_samples, *v.min_samples);
  if (v.min_time_s) o.min_time_s = *v.min_time_s;
  if (v.max_time_s) o.max_time_s = *v.max_time_s;
  if (v.max_time_s && !v.min_time_s)
    o.min_time_s = std::min(o.min_time_s, std::max(0.0, *v.max_time_s));
  if (v.min_time_s && !v.max_time_s) o.max_time_s = std::max(o.max_time_s, *v.min_time_s);
  if (v.max_noise) o.max_noise = *v.max_noise;
  validate(o);
  return o;
}

namespace {
int floor_samples(const MeasureOptions& o) {  // fewest samples that give a spread
  return std::min(o.min_samples, 3);
}

// The fewest samples enough_samples() can stop at when every run takes run_s: --min-samples, cut
// down by --max-time to no fewer than floor_samples.
int fewest_samples(const MeasureOptions& o, double run_s) {
  if (run_s <= 0 || run_s * o.min_samples <= o.max_time_s) return o.min_samples;
  const double within_budget = std::ceil(o.max_time_s / run_s);
  return std::max(floor_samples(o),
                  static_cast<int>(std::min<double>(within_budget, o.min_samples)));
}
}  // namespace

bool enough_samples(const std::vector<double>& samples_us, double elapsed_s,
                    const MeasureOptions& o) {
  const auto n = static_cast<int>(samples_us.size());
  if (n >= o.max_samples) return true;
  if (elapsed_s >= o.max_time_s && n >= floor_samples(o)) return true;
  if (n >= o.min_samples && elapsed_s >= o.min_time_s)
    return relative_standard_error(samples_us) < o.max_noise;
  return false;
}

Measurement measure(const MeasureOptions& o, const std::function<double()>& sample,
                    const std::function<void()>& prepare, const MeasureHints& hints,
                    const std::function<void(bool starting)>& around_sampling) {
  Measurement m;
  CpuTimer wall;
  m.warmup_skipped = hints.provider_warm && hints.expected_run_s > 0 &&
                     hints.expected_run_s >= hints.skip_warmup_s;
  // After the case's first run: the least it will take, said when that is minutes.
  auto first_run = [&](double run_us) {
    const double run_s = run_us / 1e6;
    const int runs =
        (m.warmup_skipped ? 0 : std::max(o.warmup_iters, 1)) + fewest_samples(o, run_s);
    announce_long_case(run_s, run_s * runs, runs);
  };
  // An interrupt (SIGINT, SIGTERM) ends the case at the next run boundary (CaseLoop catches it
  // and does not record the cut-short case).
  auto stop_if_interrupted = [] {
    if (interrupted()) throw CaseInterrupted{};
  };
  while (!m.warmup_skipped &&
         (m.warmup_runs < o.warmup_iters || wall.elapsed_s() < o.warmup_time_s)) {
    stop_if_interrupted();
    if (prepare) prepare();
    m.warmup_us.push_back(sample());
    if (++m.warmup_runs == 1) first_run(m.warmup_us.back());
    // A single run longer than the whole sampling budget needs no further warm-up.
    if (m.warmup_runs >= o.warmup_iters && wall.elapsed_s() > o.max_time_s) break;
  }
  m.warmup_s = wall.elapsed_s();

  if (around_sampling) around_sampling(true);
  wall.restart();
  while (true) {
    stop_if_interrupted();
    if (prepare) prepare();
    m.samples_us.push_back(sample());
    if (m.samples_us.size() == 1 && m.warmup_runs == 0) first_run(m.samples_us.back());
    if (enough_samples(m.samples_us, wall.elapsed_s(), o)) break;
  }
  m.sampling_s = wall.elapsed_s();
  if (around_sampling) around_sampling(false);
  m.stats = compute_stats(m.samples_us);
  m.noisy = m.stats.rse >= o.max_noise;
  return m;
}

nlohmann::json measurement_json(const Measurement& m) {
  nlohmann::json j = {{"warmup_runs", m.warmup_runs},       {"warmup_us", m.warmup_us},
                      {"warmup_skipped", m.warmup_skipped}, {"warmup_s", m.warmup_s},
                      {"sampling_s", m.sampling_s},         {"rse", m.stats.rse}};
  if (m.sm_clock_before_mhz) j["sm_clock_before_mhz"] = *m.sm_clock_before_mhz;
  if (m.sm_clock_after_mhz) j["sm_clock_after_mhz"] = *m.sm_clock_after_mhz;
  return j;
}

std::string throttle_note(const Measurement& m, double max_clock_mhz) {
  if (!m.sm_clock_before_mhz || !m.sm_clock_after_mhz || max_clock_mhz <= 0) return "";
  const double low = std::min(*m.sm_clock_before_mhz, *m.sm_clock_after_mhz);
  if (low >= 0.75 * max_clock_mhz) return "";
  return fmt::format("throttled (SM clock {:.0f} MHz, below 75% of the {:.0f} MHz maximum)", low,
                     max_clock_mhz);
}

std::string noise_note(const Measurement& m, const MeasureOptions& o) {
  if (!m.noisy) return "";
  return fmt::format("noisy (rse {:.1f}% > {:.1f}% after {} samples, {:.1f} s)", m.stats.rse * 100,
                     o.max_noise * 100, m.stats.count, m.sampling_s);
}

}  // namespace opbench
