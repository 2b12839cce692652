#pragma once
// How every CPU provider (dense and expert GEMMs, the memory-bound operators) samples a case: each
// sample on the next operand set of a rotation plan, after a flush of the CPU's caches with
// --cold, timed on the host under the shared stop rule (measure). The fastest rate seen so far
// predicts how long the next case of a kind runs: a case expected to outlast the warm-up skip
// threshold is then its own warm-up, since the provider's threads exist and its pools are
// touched (measured: the first sample of such a run, fresh pools included, is within the spread
// of the rest; lm_head 8192x128256x4096: 131.3 s against 131.5 and 131.2 s).
#include <cstdint>
#include <functional>
#include <map>

#include "common/host_buffer.hpp"
#include "common/measure.hpp"

namespace opbench {

class HostSampler {
 public:
  // Times run(set) over `sets` rotating sets for `work` units of work (FLOPs, bytes) of a `kind`
  // whose rates compare (a dtype; 0 when all do). `last_set` is the set the last sample used: its
  // result is what --check reads.
  Measurement time(const MeasureOptions& measure, bool cold, std::int64_t sets, double work,
                   int kind, const std::function<void(std::int64_t set)>& run,
                   std::int64_t& last_set);

 private:
  HostBuffer flush_;                 // --cold: written between samples, cpu_cache_flush_bytes
  std::map<int, double> best_rate_;  // work per second, the best sample of each kind so far
};

}  // namespace opbench
