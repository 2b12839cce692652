#pragma once
// Sample statistics of timings.
#include <cstddef>
#include <span>
#include <vector>

namespace opbench {

struct Stats {
  std::size_t count = 0;
  double mean = 0, median = 0, min = 0, max = 0;
  double stddev = 0;  // sample standard deviation (n - 1)
  double p99 = 0;
  double cv = 0;   // stddev / mean
  double rse = 0;  // relative standard error of the mean: stddev / sqrt(n) / mean
};

// Percentile p in [0, 100] of sorted values, linear interpolation between closest ranks
// (numpy's default): percentile({1..10}, 90) = 9.1.
double percentile_sorted(std::span<const double> sorted, double p);

Stats compute_stats(std::span<const double> samples);

// compute_stats(samples).rse without sorting: the stop rule asks it after every sample, over up
// to 10000 samples, so it must stay a single pass.
double relative_standard_error(std::span<const double> samples);

}  // namespace opbench
