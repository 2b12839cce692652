#pragma once
// The operators that are neither elementwise (memops/elementwise.hpp) nor copies between
// memories: the norms, softmax and cross-entropy, rope, the embedding, the optimizer and the
// casts. Each is described once, by functions in its family's file (memops/ops_*.cpp) that this
// table names: what it reads and writes (the operand list every provider binds, whose sums are
// its bytes), the shapes it cannot take, and how --check holds its outputs to the fp64 reference
// (memops/reference_memops) and to which bound. The fast code is the backends' alone, each
// dispatching in one place (cpu_memops::run, the CUDA provider's enqueue); the per-element and
// per-row arithmetic they share is memops/memop_math.hpp's.
#include <optional>
#include <string>

#include "memops/memop.hpp"
#include "memops/memop_operands.hpp"

namespace opbench {

class ReferenceCheck;  // memops/memop_check.hpp

// The functions that describe an operator, each defined in its family's file (ops_norms,
// ops_softmax, ops_rope, ops_embedding, ops_optimizer, ops_casts).
namespace memop_specs {
// Its operands, in the order every provider binds them (memop_operands adds the seeds).
using OperandsFn = void(const MemopCase& c, OperandList& list);
// Its outputs against the fp64 reference.
using CheckFn = void(ReferenceCheck& check);
// The bound each output is held to, in words; `rounding` is ", + u for the rounding to bf16"
// (empty for fp32, or where the operator fixes its dtype).
using RuleFn = std::string(const MemopCase& c, const std::string& rounding);
// A shape it cannot take, with the field concerned (memop_shape_problem).
using ShapeRuleFn = std::optional<ShapeProblem>(const MemopCase& c);

OperandsFn norm_operands, add_rmsnorm_operands, softmax_operands, cross_entropy_operands,
    rope_operands, embedding_operands, adamw_operands, cast_operands, fp8_operands;
CheckFn check_norm, check_add_rmsnorm, check_softmax, check_cross_entropy, check_rope,
    check_embedding, check_adamw, check_cast, check_fp8;
RuleFn norm_rule, add_rmsnorm_rule, row_rule, rope_rule, embedding_rule, adamw_rule, exact_rule;
ShapeRuleFn rope_shape_problem, embedding_shape_problem;
}  // namespace memop_specs

struct MemopSpec {
  MemOp op;
  // Whether it works a row of `cols` elements at a time (a norm, softmax, rope, ...): our CUDA
  // kernels then take rows below 2^31 elements.
  bool rows;
  memop_specs::OperandsFn* operands;
  memop_specs::CheckFn* check;
  memop_specs::RuleFn* rule;
  memop_specs::ShapeRuleFn* shape_problem = nullptr;  // null: it takes any shape
};
inline constexpr bool kRowOperator = true, kWholeOperator = false;

namespace memop_specs {

// The catalogue: one row per operator.
inline const MemopSpec kAll[] = {
    {MemOp::rmsnorm, kRowOperator, norm_operands, check_norm, norm_rule},
    {MemOp::layernorm, kRowOperator, norm_operands, check_norm, norm_rule},
    {MemOp::add_rmsnorm, kRowOperator, add_rmsnorm_operands, check_add_rmsnorm, add_rmsnorm_rule},
    {MemOp::softmax, kRowOperator, softmax_operands, check_softmax, row_rule},
    {MemOp::cross_entropy, kRowOperator, cross_entropy_operands, check_cross_entropy, row_rule},
    {MemOp::rope, kRowOperator, rope_operands, check_rope, rope_rule, rope_shape_problem},
    {MemOp::embedding, kRowOperator, embedding_operands, check_embedding, embedding_rule,
     embedding_shape_problem},
    {MemOp::adamw, kWholeOperator, adamw_operands, check_adamw, adamw_rule},
    {MemOp::adamw_bf16, kWholeOperator, adamw_operands, check_adamw, adamw_rule},
    {MemOp::cast_to_bf16, kWholeOperator, cast_operands, check_cast, exact_rule},
    {MemOp::cast_to_fp32, kWholeOperator, cast_operands, check_cast, exact_rule},
    {MemOp::fp8_quantize, kWholeOperator, fp8_operands, check_fp8, exact_rule},
};

}  // namespace memop_specs

// The spec of `op`; nullptr for an elementwise operator or a copy.
inline const MemopSpec* memop_spec(MemOp op) {
  for (const MemopSpec& spec : memop_specs::kAll)
    if (spec.op == op) return &spec;
  return nullptr;
}

}  // namespace opbench
