#pragma once
// How the CPU providers (dense and expert GEMMs) time their calls: operand sets in host pools,
// rotated over 4x the last-level cache (or the cache flushed with --cold), sampled by the shared
// HostSampler.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "common/host_sampler.hpp"
#include "common/measure.hpp"
#include "common/rotation.hpp"
#include "gemm/cblas_gemm.hpp"
#include "gemm/provider.hpp"

namespace opbench {

class HostGemmTiming {
 public:
  HostGemmTiming();

  std::uint64_t llc_bytes() const { return llc_bytes_; }
  // Plans the sets of one case (60% of the available memory at most) and fills the pools; nullopt
  // with `result` a skipped row when not even one set fits.
  std::optional<RotationPlan> prepare(const GemmRunOptions& o, DType t, std::int64_t input_stride,
                                      std::int64_t output_stride, GemmResult& result);
  // Times run(set) — set the operand set to use — for `flops` of work in `t`; `last_set` is the
  // set the last sample used (its result is what --check reads).
  Measurement time(const GemmRunOptions& o, const RotationPlan& plan, DType t, double flops,
                   const std::function<void(std::int64_t set)>& run, std::int64_t& last_set);

  unsigned char* inputs() const { return pools_.inputs(); }
  unsigned char* outputs() const { return pools_.outputs(); }

 private:
  std::uint64_t llc_bytes_;
  HostOperandPools pools_;
  HostSampler sampler_;
};

}  // namespace opbench
