#pragma once
// Buffer rotation: a case's operands are replicated into enough sets that cycling through them
// touches at least 4x the last-level cache, so no sample finds its inputs already cached.
#include <cstdint>
#include <string>

namespace opbench {

struct RotationPlan {
  std::int64_t sets = 1;
  std::int64_t working_set_bytes = 0;  // sets x set_bytes
  bool fits = true;                    // false: not even one set fits in the memory budget
};

// sets = ceil(4 · cache_bytes / set_bytes), at least 1, and no more than the budget holds.
RotationPlan plan_rotation(std::int64_t set_bytes, std::uint64_t cache_bytes,
                           std::uint64_t memory_budget);

// "1.5 GiB", "512 MiB", "48 KiB", "100 B"
std::string human_bytes(double bytes);

constexpr std::int64_t align_up(std::int64_t value, std::int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace opbench
