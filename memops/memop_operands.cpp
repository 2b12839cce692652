#include "memops/memop_operands.hpp"

#include <fmt/format.h>

#include "memops/memop_inputs.hpp"

namespace opbench {
namespace {

// Inputs of the exp-based operators (softmax, cross-entropy, the activations) and of fp8
// quantisation span [-4, 4), where their curves bend and e4m3's range is covered.
constexpr float kWide = 4.0f;

struct Builder {
  std::vector<OperandSpec> v;
  Builder& in(const char* name, std::int64_t count, DType type, float scale = 1.0f) {
    return add(name, count, type, OperandRole::input, OperandFill::uniform, scale);
  }
  Builder& filled(const char* name, std::int64_t count, DType type, OperandFill fill) {
    return add(name, count, type, OperandRole::input, fill);
  }
  Builder& out(const char* name, std::int64_t count, DType type) {
    return add(name, count, type, OperandRole::output, OperandFill::none);
  }
  Builder& state(const char* name, std::int64_t count, OperandFill fill, DType type = DType::fp32) {
    return add(name, count, type, OperandRole::state, fill);
  }
  Builder& add(const char* name, std::int64_t count, DType type, OperandRole role, OperandFill fill,
               float scale = 1.0f) {
    v.push_back(
        {.name = name, .type = type, .count = count, .role = role, .fill = fill, .scale = scale});
    return *this;
  }
};

}  // namespace

std::vector<OperandSpec> memop_operands(const MemopCase& c) {
  const DType t = c.dtype, f32 = DType::fp32, bf16 = DType::bf16, ids = DType::int64;
  const std::int64_t n = c.elements(), rows = c.rows, cols = c.cols;
  const bool fwd = c.pass == MemPass::fwd;
  Builder b;
  switch (c.op) {
    case MemOp::add:
      b.in("x", n, t).in("y", n, t).out("z", n, t);
      break;
    case MemOp::rmsnorm:  // fwd: x, w -> y, rstd; bwd: dy, x, w, rstd -> dx, dw
      if (fwd)
        b.in("x", n, t).in("w", cols, t).out("y", n, t).out("rstd", rows, f32);
      else
        b.in("dy", n, t)
            .in("x", n, t)
            .in("w", cols, t)
            .filled("rstd", rows, f32, OperandFill::derived)
            .out("dx", n, t)
            .out("dw", cols, t);
      break;
    case MemOp::layernorm:  // fwd: x, w, b -> y, mean, rstd; bwd: dy, x, w, mean, rstd -> dx, dw,
                            // db
      if (fwd)
        b.in("x", n, t)
            .in("w", cols, t)
            .in("b", cols, t)
            .out("y", n, t)
            .out("mean", rows, f32)
            .out("rstd", rows, f32);
      else
        b.in("dy", n, t)
            .in("x", n, t)
            .in("w", cols, t)
            .filled("mean", rows, f32, OperandFill::derived)
            .filled("rstd", rows, f32, OperandFill::derived)
            .out("dx", n, t)
            .out("dw", cols, t)
            .out("db", cols, t);
      break;
    case MemOp::softmax:  // fwd: x -> y; bwd: y (a forward's), dy -> dx
      if (fwd)
        b.in("x", n, t, kWide).out("y", n, t);
      else
        b.filled("y", n, t, OperandFill::derived).in("dy", n, t).out("dx", n, t);
      break;
    case MemOp::swiglu:  // fwd: g, u -> y; bwd: g, u, dy -> dg, du
      b.in("g", n, t, kWide).in("u", n, t);
      if (fwd)
        b.out("y", n, t);
      else
        b.in("dy", n, t).out("dg", n, t).out("du", n, t);
      break;
    case MemOp::gelu:  // fwd: x -> y; bwd: x, dy -> dx
    case MemOp::silu:
      b.in("x", n, t, kWide);
      if (fwd)
        b.out("y", n, t);
      else
        b.in("dy", n, t).out("dx", n, t);
      break;
    case MemOp::rope: {  // q and k (or their gradients) and the fp32 cos and sin tables
      const std::int64_t table = rows * (c.head_dim / 2);
      b.in(fwd ? "x" : "dy", n, t)
          .filled("cos", table, f32, OperandFill::derived)
          .filled("sin", table, f32, OperandFill::derived)
          .out(fwd ? "y" : "dx", n, t);
      break;
    }
    case MemOp::cross_entropy:  // logits and targets -> the logits' gradient and the loss
      b.in("logits", n, t, kWide)
          .filled("targets", rows, ids, OperandFill::targets)
          .out("dlogits", n, t)
          .out("loss", rows, f32);
      break;
    case MemOp::embedding:
      if (fwd) {
        // One table for every set, each set's ids pick other rows of it; the operator touches
        // only the rows it looks up.
        b.in("table", c.vocab * cols, t);
        b.v.back().shared = true;
        b.v.back().touched = n;
        b.filled("ids", rows, ids, OperandFill::ids).out("y", n, t);
      } else {  // the whole table's gradient is written, zero where no id points
        b.in("dy", n, t)
            .filled("ids", rows, ids, OperandFill::ids)
            .out("dtable", c.vocab * cols, t);
      }
      break;
    case MemOp::adamw:  // parameter, gradient, two moments; all fp32
      b.state("param", n, OperandFill::uniform)
          .in("grad", n, f32)
          .state("m", n, OperandFill::uniform)
          .state("v", n, OperandFill::derived);
      break;
    case MemOp::adamw_bf16:  // fp32 master weight and moments, bf16 gradient and parameter copy
      b.state("param", n, OperandFill::uniform)
          .in("grad", n, bf16)
          .state("m", n, OperandFill::uniform)
          .state("v", n, OperandFill::derived)
          .out("param_bf16", n, bf16);
      break;
    case MemOp::cast_to_bf16:
      b.in("x", n, f32).out("y", n, bf16);
      break;
    case MemOp::cast_to_fp32:
      b.in("x", n, bf16).out("y", n, f32);
      break;
    case MemOp::fp8_quantize:  // bf16 input and the fp32 scale -> e4m3 output and the amax
      b.in("x", n, bf16, kWide)
          .filled("scale", 1, f32, OperandFill::fp8_scale)
          .out("y", n, DType::fp8_e4m3)
          .out("amax", 1, f32);
      break;
    // The eager kernels (memops/elementwise.hpp): the updated operand of an in-place kernel
    // first, then the inputs, then the output, the order their providers bind them in.
    case MemOp::mul:
      b.in("x", n, t).in("y", n, t).out("z", n, t);
      break;
    case MemOp::scale:
    case MemOp::sqrt:
      b.in("x", n, t).out("y", n, t);
      break;
    case MemOp::fill:
      b.out("y", n, t);
      break;
    case MemOp::scale_inplace:
      b.state("x", n, OperandFill::uniform, t);
      break;
    case MemOp::axpy_inplace:
      b.state("y", n, OperandFill::uniform, t).in("x", n, t);
      break;
    case MemOp::addcdiv_inplace:
      b.state("p", n, OperandFill::uniform, t).in("m", n, t).in("d", n, t);
      break;
    case MemOp::copy:
      b.in("src", n, t).out("dst", n, t);
      break;
    default:  // between memories: the providers move the bytes themselves
      break;
  }
  for (std::size_t i = 0; i < b.v.size(); ++i)
    b.v[i].seed = memop_inputs::kSeed + 7919 * i;
  return b.v;
}

OperandSpec workspace_operand(std::int64_t bytes) {
  OperandSpec o;
  o.name = "workspace";
  o.type = DType::uint8;
  o.count = bytes;
  o.role = OperandRole::workspace;
  o.fill = OperandFill::scratch;
  o.shared = true;
  return o;
}

std::optional<ShapeProblem> memop_shape_problem(const MemopCase& c) {
  if (c.op == MemOp::rope) {
    if (c.heads < 1 || c.kv_heads < 1 || c.head_dim < 2 || c.head_dim % 2 != 0)
      return ShapeProblem{"heads",
                          "rope needs heads and kv_heads of at least 1 and an even head_dim"};
    if (c.cols != (c.heads + c.kv_heads) * c.head_dim)
      return ShapeProblem{"cols", fmt::format("rope: cols must be (heads + kv_heads) x head_dim "
                                              "= {}, got {}",
                                              (c.heads + c.kv_heads) * c.head_dim, c.cols)};
  }
  if (c.op == MemOp::embedding && c.vocab < 1)
    return ShapeProblem{"vocab", "embedding needs a vocab of at least 1"};
  return std::nullopt;
}

}  // namespace opbench
