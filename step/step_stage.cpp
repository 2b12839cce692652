#include "step/step_stage.hpp"

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
  op.hardware_flops = op.model_flops > 0 ? op.model_flops : op.hardware_flops;
  op.model_flops = 0;
  return op;
}

MemopCase memop_case(const StepConfig& c, MemOp op, MemPass pass, std::int64_t rows,
                     std::int64_t cols) {
  MemopCase mc;
  mc.report = mc.source = c.model.name;
  mc.op = op;
  mc.pass = pass;
  mc.rows = rows;
  mc.cols = cols;
  mc.dtype = c.dtype;
  mc.tp = c.tp;
  mc.micro_batch = c.micro_batch;
  mc.seqlen = c.seq();
  return mc;
}

MemopCase token_rows_case(const StepConfig& c, MemPass pass, std::int64_t copies,
                          std::int64_t tokens) {
  MemopCase mc = memop_case(c, MemOp::embedding, pass, copies, c.model.hidden_size);
  mc.vocab = tokens;
  return mc;
}

MemopCase router_softmax_case(const StepConfig& c, MemPass pass, std::int64_t tokens) {
  MemopCase mc = memop_case(c, MemOp::softmax, pass, tokens, c.model.moe->n_routed_experts);
  mc.dtype = DType::fp32;
  return mc;
}

}  // namespace opbench
