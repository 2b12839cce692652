#pragma once
// Buffer rotation: a case's operands are replicated into enough sets that cycling through them
// touches at least 4x the last-level cache, so no sample finds its inputs already cached.
#include <cstdint>
#include <optional>
#include <string>

#include "common/int_math.hpp"

namespace opbench {

struct RotationPlan {
  std::int64_t sets = 1;
  std::int64_t working_set_bytes = 0;  // sets x set_bytes
  bool fits = true;                    // false: not even one set fits in the memory budget
};

// sets = ceil(4 · cache_bytes / set_bytes), at least 1, and no more than the budget holds.
RotationPlan plan_rotation(std::int64_t set_bytes, std::uint64_t cache_bytes,
                           std::uint64_t memory_budget);

// How much memory one case's operands may take, written once for every provider: 60% of what
// the host has available (MemAvailable: the rest is the OS's, the page cache's and the other
// ranks'), 90% of what is free on a GPU (the rest for the CUDA context, library workspaces and
// fragmentation); plus what the provider's reusable pools already hold, which it frees before
// allocating larger ones.
std::uint64_t host_memory_budget(std::uint64_t held_bytes = 0);
std::uint64_t device_memory_budget(std::uint64_t free_bytes, std::uint64_t held_bytes = 0);

// A case's rotation, or why it is skipped ("rotate or skip"): plan_rotation over the bytes a
// sample touches per set, at most budget / set_bytes sets (what a set allocates), one set with
// --cold (the cache is flushed instead). When not one set fits, `skip_note` names what one set
// needs and what `budget` bytes of `memory` ("host memory", "device memory") allow.
struct OperandRotation {
  std::optional<RotationPlan> plan;
  std::string skip_note;
  const char* cache = "rotate";  // the rows' `cache` column: "rotate", or "flush" with --cold
};
OperandRotation plan_operand_rotation(std::int64_t set_bytes, std::int64_t touched_bytes, bool cold,
                                      std::uint64_t cache_bytes, std::int64_t budget,
                                      const char* memory);
// The plan of `r`, with the row's `cache` and `working_set_bytes` columns set from it; nullopt,
// the row skipped and its note saying what one set needs, when not one set fits. Row: any
// family's result (GemmResult, MemopResult), whose Status has `skipped`.
template <class Row>
std::optional<RotationPlan> plan_or_skip(const OperandRotation& r, Row& row) {
  if (!r.plan) {
    row.status = decltype(row.status)::skipped;
    row.note = r.skip_note;
    return std::nullopt;
  }
  row.cache = r.cache;
  row.working_set_bytes = r.plan->working_set_bytes;
  return r.plan;
}

// "1.5 GiB", "512 MiB", "48 KiB", "100 B"
std::string human_bytes(double bytes);

}  // namespace opbench
