#pragma once
// What the builders of a stage's operator list share (step_operators.cpp for the fused plan and
// the parts both plans have, eager_plan.cpp for PyTorch eager's kernels): the stage's view of the
// configuration and how an operator is made and recomputed.
#include <cstdint>
#include <string>

#include "gemm/moe_routing.hpp"
#include "step/step_config.hpp"
#include "step/step_operator.hpp"

namespace opbench {

struct StageView {
  const StepConfig& c;
  std::int64_t stage;
  ModelConfig model;  // the stage's layers only
  std::int64_t m;     // micro-batches per step
  bool first() const { return stage == 0; }
  bool last() const { return stage == c.pp - 1; }
};

StepOperator make_op(StepFamily family, StepPhase phase, std::string name, std::int64_t count,
                     std::string note);

// Full recomputation runs every decoder layer's forward again inside the backward pass: its
// FLOPs are hardware FLOPs, not model FLOPs (Megatron's HFU against MFU).
StepOperator recomputed(StepOperator op);

// A memory-bound operator of the model's dtype over rows x cols, for make_op's memop field.
MemopCase memop_case(const StepConfig& c, MemOp op, MemPass pass, std::int64_t rows,
                     std::int64_t cols);

// A memory-bound case of the step's run (model, dtype, tp, micro-batch, sequence), its operator
// and shape to fill in: what memop_case starts from, and the base of memops's MoE cases.
MemopCase step_memop_base(const StepConfig& c);

// An MoE model's expert-parallel rank with the most routed tokens under --routing, each rank of
// the group routing the tokens of a micro-batch of `tokens` its etp ranks hold
// (expert_routed_tokens: `tokens` when etp = tp).
RankLoad busiest_expert_rank(const StepConfig& c, std::int64_t tokens);

}  // namespace opbench
