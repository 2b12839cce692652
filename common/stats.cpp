#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace opbench {

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(rank));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

namespace {

struct Moments {
  double mean = 0, stddev = 0, rse = 0;
};

// Mean, sample standard deviation (n - 1) and relative standard error, in sample order.
Moments moments(std::span<const double> samples) {
  Moments m;
  if (samples.empty()) return m;
  const auto n = static_cast<double>(samples.size());
  m.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (samples.size() > 1) {
    double ss = 0;
    for (double v : samples)
      ss += (v - m.mean) * (v - m.mean);
    m.stddev = std::sqrt(ss / (n - 1));
  }
  if (m.mean > 0) m.rse = m.stddev / m.mean / std::sqrt(n);
  return m;
}

}  // namespace

Stats compute_stats(std::span<const double> samples) {
  Stats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = percentile_sorted(sorted, 50);
  s.p99 = percentile_sorted(sorted, 99);
  const Moments m = moments(samples);
  s.mean = m.mean;
  s.stddev = m.stddev;
  s.rse = m.rse;
  if (s.mean > 0) s.cv = s.stddev / s.mean;
  return s;
}

double relative_standard_error(std::span<const double> samples) {
  return moments(samples).rse;
}

}  // namespace opbench
