#include "step/step_operator.hpp"

#include <fmt/format.h>

#include "common/enum_names.hpp"
#include "gemm/model_gemms.hpp"

namespace opbench {

std::string family_name(StepFamily f) {
  static constexpr EnumNames<StepFamily, 5> kNames{{{StepFamily::gemm, "gemm"},
                                                    {StepFamily::experts, "experts"},
                                                    {StepFamily::attention, "attention"},
                                                    {StepFamily::memop, "memop"},
                                                    {StepFamily::collective, "collective"}}};
  return std::string(enum_name(kNames, f));
}

std::string phase_name(StepPhase p) {
  static constexpr EnumNames<StepPhase, 6> kNames{{{StepPhase::forward, "forward"},
                                                   {StepPhase::backward, "backward"},
                                                   {StepPhase::recompute, "recompute"},
                                                   {StepPhase::param_gather, "param_gather"},
                                                   {StepPhase::grad_sync, "grad_sync"},
                                                   {StepPhase::optimizer, "optimizer"}}};
  return std::string(enum_name(kNames, p));
}

std::string StepOperator::args() const {
  switch (family) {
    case StepFamily::gemm:
      return fmt::format("m{} n{} k{} {} {}", gemm.m, gemm.n, gemm.k, gemm.layout(),
                         dtype_name(gemm.dtype));
    case StepFamily::experts:
      return fmt::format("{} {} experts n{} k{} tokens {}..{} (total {}) {} {}",
                         pass_name(experts.pass), experts.experts(), experts.N, experts.K,
                         experts.min_tokens(), experts.max_tokens(), experts.total_tokens(),
                         moe_impl_name(moe_impl), dtype_name(experts.dtype));
    case StepFamily::attention:
      return fmt::format("{} {} {}", attention_pass_name(attention_pass), attention.dims(),
                         dtype_name(attention.dtype));
    case StepFamily::memop:
      return fmt::format("{} {} {} {}", memop_name(memop.op), mem_pass_name(memop.pass),
                         memop.dims(), dtype_name(memop.dtype));
    case StepFamily::collective:
      return fmt::format("{} {} B over {} ranks {}", coll_op_name(collective.op),
                         collective.size_bytes, collective.group_size,
                         dtype_name(collective.dtype));
  }
  return "";
}

std::string StepOperator::identity() const {
  return family_name(family) + " " + args();
}

}  // namespace opbench
