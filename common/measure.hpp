#pragma once
// The one sampling loop of opbench: warm-up by count and time, then timed samples until the
// mean is precise enough or a time/sample budget is spent. Every sample is kept.
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/stats.hpp"

namespace opbench {

struct MeasureOptions {
  int warmup_iters = 1;         // at least this many untimed runs (absorbs first-call costs) ...
  double warmup_time_s = 0.05;  // ... and at least this long
  int min_samples = 5;
  int max_samples = 1000;
  double min_time_s = 0.2;
  double max_time_s = 2.0;
  double max_noise = 0.01;  // target relative standard error of the mean
};

// Throws bad_input naming the flag when an option is out of range.
void validate(const MeasureOptions& options);

// What each kind of backend samples by default (README, "Measurement"):
//   cpu:        1 run and 0.05 s of warm-up; 5..1000 samples over 0.2..2 s
//   gpu:        1 run and 0.1 s of warm-up (clocks ramp up); 10..10000 samples over 0.1..1 s
//   collective: a sample is -n calls after -w warm-up calls; 3..100 samples over 0..1 s
// and in every case: stop once the relative standard error of the mean is under 1%.
enum class MeasureProfile { cpu, gpu, collective };
MeasureOptions measure_defaults(MeasureProfile profile);

// The measurement flags a user gave; the rest come from the backend's defaults.
struct MeasureOverrides {
  std::optional<int> warmup_iters, min_samples, max_samples;
  std::optional<double> warmup_time_s, min_time_s, max_time_s, max_noise;
};
// The backend's defaults with the user's flags on top; validated (bad_input names the flag).
MeasureOptions resolve(MeasureProfile profile, const MeasureOverrides& overrides);

// Whether sampling can stop: the shared rule of measure() and the collectives' runner.
// `samples_us` so far, `elapsed_s` of sampling so far.
bool enough_samples(const std::vector<double>& samples_us, double elapsed_s,
                    const MeasureOptions& options);

// What the caller knows before measuring. A run expected to last longer than `skip_warmup_s`
// on a provider that has already run a case (library initialised, buffers touched) is its own
// warm-up: first-call costs are then nil next to it, and a warm-up run would double the cost
// of the longest cases for nothing.
struct MeasureHints {
  double expected_run_s = 0;  // 0: unknown
  bool provider_warm = false;
  double skip_warmup_s = 1.0;
};

struct Measurement {
  std::vector<double> samples_us;
  Stats stats;
  bool noisy = false;     // stopped on a budget with rse >= max_noise
  double warmup_s = 0;    // wall time spent warming up
  double sampling_s = 0;  // wall time spent sampling (including untimed work between samples)
  int warmup_runs = 0;
  std::vector<double> warmup_us;  // each warm-up run, as timed by the caller's timer
  bool warmup_skipped = false;    // by MeasureHints: a long run on a warm provider
  // GPU: the SM clock just before the first sample and just after the last (MHz).
  std::optional<double> sm_clock_before_mhz, sm_clock_after_mhz;
};

// `sample` runs the operation once and returns its time in microseconds, as measured by the
// caller's timer (CUDA events on the GPU, steady_clock on the CPU). `prepare`, if given, runs
// before every warm-up run and sample, outside the timed region (buffer rotation, cache flush).
// `around_sampling`, if given, runs once after the warm-up and before the first sample (with
// `true`) and once after the last sample (with `false`): what must see the measured region and
// nothing else, such as the GPU's SM clock, which ramps up during the warm-up.
Measurement measure(const MeasureOptions& options, const std::function<double()>& sample,
                    const std::function<void()>& prepare = {}, const MeasureHints& hints = {},
                    const std::function<void(bool starting)>& around_sampling = {});

// The measurement for a row's JSON line: warm-up runs and their times, loop wall times, rse.
nlohmann::json measurement_json(const Measurement& m);

// "throttled (SM clock 1210 MHz, below 75% of the 1980 MHz maximum)" when either clock reading
// is under 75% of `max_clock_mhz`; "" otherwise or when the clock was not read.
std::string throttle_note(const Measurement& m, double max_clock_mhz);

// "noisy (rse 3.2% > 1.0% after 2.0 s)" or "" when the measurement met its target.
std::string noise_note(const Measurement& m, const MeasureOptions& options);

}  // namespace opbench
