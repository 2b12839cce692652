#include "gemm/host_gemm_timing.hpp"
#include "common/rotation.hpp"

#include "common/env.hpp"
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
  return plan;
}

Measurement HostGemmTiming::time(const GemmRunOptions& o, const RotationPlan& plan, DType t,
                                 double flops, const std::function<void(std::int64_t set)>& run,
                                 std::int64_t& last_set) {
  // Rates compare within a dtype (OpenBLAS's fp64 runs at half its fp32 rate).
  return sampler_.time(o.measure, o.cold, plan.sets, flops, static_cast<int>(t), run, last_set);
}

}  // namespace opbench
