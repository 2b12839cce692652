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

Stats compute_stats(std::span<const double> samples) {
  Stats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  auto n = static_cast<double>(s.count);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = percentile_sorted(sorted, 50);
  s.p99 = percentile_sorted(sorted, 99);
  if (s.count > 1) {
    double ss = 0;
    for (double v : sorted)
      ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / (n - 1));
  }
  if (s.mean > 0) {
    s.cv = s.stddev / s.mean;
    s.rse = s.cv / std::sqrt(n);
  }
  return s;
}

}  // namespace opbench
