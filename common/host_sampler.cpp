#include "common/host_sampler.hpp"

#include <algorithm>
#include <cstring>

#include "common/env.hpp"
#include "common/timer.hpp"

namespace opbench {

Measurement HostSampler::time(const MeasureOptions& measure_options, bool cold, std::int64_t sets,
                              double work, int kind,
                              const std::function<void(std::int64_t set)>& run,
                              std::int64_t& last_set) {
  if (cold && flush_.bytes() == 0) flush_ = HostBuffer(cpu_cache_flush_bytes());
  std::int64_t set = 0;
  auto prepare = [&] {
    set = (set + 1) % sets;
    if (cold) std::memset(flush_.data(), static_cast<int>(set & 0xFF), flush_.bytes());
  };
  auto sample = [&] {
    CpuTimer timer;
    run(set);
    return timer.elapsed_us();
  };
  MeasureHints hints;
  if (auto rate = best_rate_.find(kind); rate != best_rate_.end()) {
    hints.provider_warm = true;
    hints.expected_run_s = work / rate->second;
  }
  Measurement m = measure(measure_options, sample, prepare, hints);
  if (m.stats.min > 0) best_rate_[kind] = std::max(best_rate_[kind], work / (m.stats.min * 1e-6));
  last_set = set;
  return m;
}

}  // namespace opbench
