#include "gemm/host_gemm_timing.hpp"
#include "common/rotation.hpp"

#include <algorithm>
#include <cstring>

#include "common/env.hpp"
#include "common/timer.hpp"
#include "gemm/operand_sets.hpp"

namespace opbench {

HostGemmTiming::HostGemmTiming() : llc_bytes_(cpu_cache_bytes_to_evict()) {}

std::optional<RotationPlan> HostGemmTiming::prepare(const GemmRunOptions& o, DType t,
                                                    std::int64_t input_stride,
                                                    std::int64_t output_stride,
                                                    GemmResult& result) {
  const std::uint64_t budget = host_memory_budget();
  auto plan =
      plan_operand_sets(input_stride + output_stride, o, llc_bytes_, budget, "host memory", result);
  if (!plan) return plan;
  pools_.prepare(t, plan->sets * input_stride, plan->sets * output_stride);
  if (o.cold && flush_.bytes() == 0) flush_ = HostBuffer(cpu_cache_flush_bytes());
  return plan;
}

Measurement HostGemmTiming::time(const GemmRunOptions& o, const RotationPlan& plan, DType t,
                                 double flops, const std::function<void(std::int64_t set)>& run,
                                 std::int64_t& last_set) {
  std::int64_t set = 0;
  auto prepare = [&] {
    set = (set + 1) % plan.sets;
    if (o.cold) std::memset(flush_.data(), static_cast<int>(set & 0xFF), flush_.bytes());
  };
  auto sample = [&] {
    CpuTimer timer;
    run(set);
    return timer.elapsed_us();
  };
  // Once a case of this dtype has run, OpenBLAS's threads exist and the pools are touched
  // (HostBuffer zeroes new memory); a run expected to outlast the warm-up skip threshold is
  // then its own warm-up. Measured: the first sample of such runs, fresh pools included, is
  // within the spread of the rest (lm_head 8192x128256x4096: 131.3 s vs 131.5 and 131.2 s).
  MeasureHints hints;
  if (auto rate = best_flops_per_s_.find(t); rate != best_flops_per_s_.end()) {
    hints.provider_warm = true;
    hints.expected_run_s = flops / rate->second;
  }
  Measurement m = measure(o.measure, sample, prepare, hints);
  if (m.stats.min > 0)
    best_flops_per_s_[t] = std::max(best_flops_per_s_[t], flops / (m.stats.min * 1e-6));
  last_set = set;
  return m;
}

}  // namespace opbench
