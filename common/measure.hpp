#pragma once
// The one sampling loop of opbench: warm-up by count and time, then timed samples until the
// mean is precise enough or a time/sample budget is spent. Every sample is kept.
#include <functional>
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

struct Measurement {
  std::vector<double> samples_us;
  Stats stats;
  bool noisy = false;     // stopped on a budget with rse >= max_noise
  double warmup_s = 0;    // wall time spent warming up
  double sampling_s = 0;  // wall time spent sampling (including untimed work between samples)
  int warmup_runs = 0;
};

// `sample` runs the operation once and returns its time in microseconds, as measured by the
// caller's timer (CUDA events on the GPU, steady_clock on the CPU). `prepare`, if given, runs
// before every warm-up run and sample, outside the timed region (buffer rotation, cache flush).
Measurement measure(const MeasureOptions& options, const std::function<double()>& sample,
                    const std::function<void()>& prepare = {});

// "noisy (rse 3.2% > 1.0% after 2.0 s)" or "" when the measurement met its target.
std::string noise_note(const Measurement& m, const MeasureOptions& options);

}  // namespace opbench
