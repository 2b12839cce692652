#include "common/rotation.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace opbench {

RotationPlan plan_rotation(std::int64_t set_bytes, std::uint64_t cache_bytes,
                           std::uint64_t memory_budget) {
  RotationPlan plan;
  if (set_bytes <= 0) return plan;
  const auto budget = static_cast<std::int64_t>(std::min<std::uint64_t>(memory_budget, INT64_MAX));
  if (set_bytes > budget) {
    plan.fits = false;
    plan.sets = 0;
    return plan;
  }
  const auto wanted = static_cast<std::int64_t>(4 * cache_bytes);
  plan.sets = std::max<std::int64_t>(1, (wanted + set_bytes - 1) / set_bytes);
  plan.sets = std::min(plan.sets, budget / set_bytes);
  plan.working_set_bytes = plan.sets * set_bytes;
  return plan;
}

std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

}  // namespace opbench
