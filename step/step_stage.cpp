#include "step/step_stage.hpp"

#include "gemm/model_gemms.hpp"

namespace opbench {

StepOperator make_op(StepFamily family, StepPhase phase, std::string name, std::int64_t count,
                     std::string note) {
  StepOperator op;
  op.family = family;
  op.phase = phase;
  op.name = std::move(name);
  op.count = count;
  op.note = std::move(note);
  return op;
}

StepOperator recomputed(StepOperator op) {
  op.phase = StepPhase::recompute;
  op.name += " (recomputed)";
  op.model_flops = 0;  // the hardware runs the forward's again; the model counts it once
  return op;
}

MemopCase step_memop_base(const StepConfig& c) {
  MemopCase mc;
  mc.report = mc.source = c.model.name;
  mc.dtype = c.dtype;
  mc.tp = c.tp;
  mc.micro_batch = c.micro_batch;
  mc.seqlen = c.cp_seq();  // the rank's share of the sequence, as bench_memops --model --seq-len
  return mc;
}

MemopCase memop_case(const StepConfig& c, MemOp op, MemPass pass, std::int64_t rows,
                     std::int64_t cols) {
  MemopCase mc = step_memop_base(c);
  mc.op = op;
  mc.pass = pass;
  mc.rows = rows;
  mc.cols = cols;
  return mc;
}

RankLoad busiest_expert_rank(const StepConfig& c, std::int64_t tokens) {
  const MoeConfig& e = *c.model.moe;
  const std::int64_t routed = expert_routed_tokens(tokens, c.tp, c.expert_tp());
  return busiest_rank(
      route_tokens(c.routing, e.n_routed_experts, e.num_experts_per_tok, c.ep, routed), c.ep);
}

}  // namespace opbench
