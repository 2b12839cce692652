#include "step/step_operator.hpp"

#include <fmt/format.h>

#include "gemm/model_gemms.hpp"

namespace opbench {

std::string family_name(StepFamily f) {
  switch (f) {
    case StepFamily::gemm:
      return "gemm";
    case StepFamily::experts:
      return "experts";
    case StepFamily::attention:
      return "attention";
    case StepFamily::memop:
      return "memop";
    case StepFamily::collective:
      return "collective";
  }
  return "?";
}

std::string phase_name(StepPhase p) {
  switch (p) {
    case StepPhase::forward:
      return "forward";
    case StepPhase::backward:
      return "backward";
    case StepPhase::recompute:
      return "recompute";
    case StepPhase::param_gather:
      return "param_gather";
    case StepPhase::grad_sync:
      return "grad_sync";
    case StepPhase::optimizer:
      return "optimizer";
  }
  return "?";
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
