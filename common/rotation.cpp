#include "common/rotation.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/env.hpp"

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

std::uint64_t host_memory_budget(std::uint64_t held_bytes) {
  return (available_host_memory_bytes() + held_bytes) / 10 * 6;
}

std::uint64_t device_memory_budget(std::uint64_t free_bytes, std::uint64_t held_bytes) {
  return (free_bytes + held_bytes) / 10 * 9;
}

OperandRotation plan_operand_rotation(std::int64_t set_bytes, std::int64_t touched_bytes, bool cold,
                                      std::uint64_t cache_bytes, std::int64_t budget,
                                      const char* memory) {
  OperandRotation r;
  budget = std::max<std::int64_t>(0, budget);
  RotationPlan plan =
      plan_rotation(touched_bytes, cold ? 0 : cache_bytes, static_cast<std::uint64_t>(budget));
  plan.sets = std::min(plan.sets, budget / std::max<std::int64_t>(1, set_bytes));
  if (!plan.fits || plan.sets < 1) {
    r.skip_note = fmt::format("needs {} of {} for one set of operands; {} available",
                              human_bytes(static_cast<double>(set_bytes)), memory,
                              human_bytes(static_cast<double>(budget)));
    return r;
  }
  if (cold) plan.sets = 1;
  plan.working_set_bytes = plan.sets * touched_bytes;
  r.cache = cold ? "flush" : "rotate";
  r.plan = plan;
  return r;
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
