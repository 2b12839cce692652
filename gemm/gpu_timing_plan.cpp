#include "gemm/gpu_timing_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace opbench {

GraphLaunchPlan plan_graph_launches(double launch_us, std::int64_t sets, double target_us,
                                    int max_launches) {
  const double for_time = std::ceil(target_us / std::max(launch_us, 0.1));
  const double wanted = std::max(for_time, static_cast<double>(std::max<std::int64_t>(sets, 1)));
  GraphLaunchPlan plan;
  plan.launches = static_cast<int>(std::clamp(wanted, 2.0, static_cast<double>(max_launches)));
  plan.sets_walked = std::min<std::int64_t>(std::max<std::int64_t>(sets, 1), plan.launches);
  return plan;
}

int fastest_by_median(const std::vector<std::vector<double>>& trials) {
  int best = -1;
  double best_median = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < trials.size(); ++c) {
    if (trials[c].empty()) continue;
    std::vector<double> sorted = trials[c];
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    if (median < best_median) {
      best_median = median;
      best = static_cast<int>(c);
    }
  }
  return best;
}

}  // namespace opbench
