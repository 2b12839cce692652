#include "memops/memop.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/error.hpp"
#include "common/text.hpp"
#include "memops/memop_operands.hpp"

namespace opbench {
namespace {

struct OpInfo {
  MemOp op;
  const char* name;
  bool backward;
};

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table{
      {MemOp::add, "add", false},
      {MemOp::rmsnorm, "rmsnorm", true},
      {MemOp::layernorm, "layernorm", true},
      {MemOp::softmax, "softmax", true},
      {MemOp::swiglu, "swiglu", true},
      {MemOp::gelu, "gelu", true},
      {MemOp::rope, "rope", true},
      {MemOp::cross_entropy, "cross_entropy", false},
      {MemOp::embedding, "embedding", true},
      {MemOp::adamw, "adamw", false},
      {MemOp::adamw_bf16, "adamw_bf16", false},
      {MemOp::cast_to_bf16, "cast_to_bf16", false},
      {MemOp::cast_to_fp32, "cast_to_fp32", false},
      {MemOp::fp8_quantize, "fp8_quantize", false},
      {MemOp::mul, "mul", false},
      {MemOp::scale, "scale", false},
      {MemOp::sqrt, "sqrt", false},
      {MemOp::silu, "silu", true},
      {MemOp::fill, "fill", false},
      {MemOp::scale_inplace, "scale_inplace", false},
      {MemOp::axpy_inplace, "axpy_inplace", false},
      {MemOp::addcdiv_inplace, "addcdiv_inplace", false},
      {MemOp::copy, "copy", false},
      {MemOp::h2d, "h2d", false},
      {MemOp::d2h, "d2h", false},
      {MemOp::h2d_pageable, "h2d_pageable", false},
      {MemOp::d2h_pageable, "d2h_pageable", false},
      {MemOp::peer, "peer", false},
      {MemOp::peer_all, "peer_all", false},
  };
  return table;
}

const OpInfo& info(MemOp op) {
  for (const auto& i : op_table())
    if (i.op == op) return i;
  throw std::logic_error("memop without a table entry");
}

}  // namespace

std::string memop_name(MemOp op) {
  return info(op).name;
}

std::string mem_pass_name(MemPass pass) {
  return pass == MemPass::fwd ? "fwd" : "bwd";
}

const std::vector<MemOp>& all_memops() {
  static const std::vector<MemOp> ops = [] {
    std::vector<MemOp> out;
    for (const auto& i : op_table())
      out.push_back(i.op);
    return out;
  }();
  return ops;
}

std::string memop_names() {
  std::vector<std::string> names;
  for (const auto& i : op_table())
    names.push_back(i.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

MemOp parse_memop(const std::string& name, const std::string& what) {
  const std::string lower = to_lower(trim(name));
  std::vector<std::string> names;
  for (const auto& i : op_table()) {
    if (lower == i.name) return i.op;
    names.push_back(i.name);
  }
  const std::string near = closest_match(lower, names);
  throw bad_input(fmt::format(
      "{}unknown operator '{}'{} (operators: {})", what.empty() ? "" : what + ": ", name,
      near.empty() ? "" : " (did you mean '" + near + "'?)", fmt::join(names, ", ")));
}

bool has_backward(MemOp op) {
  return info(op).backward;
}

bool is_copy(MemOp op) {
  switch (op) {
    case MemOp::copy:
    case MemOp::h2d:
    case MemOp::d2h:
    case MemOp::h2d_pageable:
    case MemOp::d2h_pageable:
    case MemOp::peer:
    case MemOp::peer_all:
      return true;
    default:
      return false;
  }
}

bool memop_accepts(MemOp op, DType t) {
  switch (op) {
    case MemOp::adamw:
    case MemOp::adamw_bf16:  // the optimizer state is fp32 whatever the model trains in
    case MemOp::cast_to_bf16:
      return t == DType::fp32;
    case MemOp::cast_to_fp32:
    case MemOp::fp8_quantize:
      return t == DType::bf16;
    default:
      return t == DType::fp32 || t == DType::bf16 || t == DType::fp16;
  }
}

// Sums over the operator's operands (memop_operands.cpp): what it must read and write at least
// once. Copies between memories move copied_bytes() each way.
std::int64_t MemopCase::read_bytes() const {
  if (is_copy(op)) return copied_bytes();
  std::int64_t bytes = 0;
  for (const auto& o : memop_operands(*this))
    if (o.read()) bytes += o.touched_bytes();
  return bytes;
}

std::int64_t MemopCase::write_bytes() const {
  if (is_copy(op)) return copied_bytes();
  std::int64_t bytes = 0;
  for (const auto& o : memop_operands(*this))
    if (o.written()) bytes += o.touched_bytes();
  return bytes;
}

std::int64_t MemopCase::copied_bytes() const {
  if (!is_copy(op)) return 0;
  const std::int64_t bytes = elements() * static_cast<std::int64_t>(dtype_size(dtype));
  return op == MemOp::peer_all ? bytes * devices : bytes;
}

std::string MemopCase::dims() const {
  if (op == MemOp::rope) return fmt::format("t{} h{}/{} d{}", rows, heads, kv_heads, head_dim);
  if (op == MemOp::embedding) return fmt::format("{}x{} of {}", rows, cols, vocab);
  if (op == MemOp::peer)
    return fmt::format("{}x{} gpu{}->gpu{}", rows, cols, src_device, dst_device);
  if (op == MemOp::peer_all) return fmt::format("{}x{} on {} gpus", rows, cols, devices);
  return fmt::format("{}x{}", rows, cols);
}

void validate(const MemopCase& c, const std::string& where) {
  auto fail = [&](const std::string& what) { throw bad_input(fmt::format("{}: {}", where, what)); };
  if (c.rows < 1) fail(fmt::format("rows must be at least 1, got {}", c.rows));
  if (c.cols < 1) fail(fmt::format("cols must be at least 1, got {}", c.cols));
  if (!memop_accepts(c.op, c.dtype))
    fail(fmt::format("{} does not take dtype {}", memop_name(c.op), dtype_name(c.dtype)));
  if (c.pass == MemPass::bwd && !has_backward(c.op))
    fail(fmt::format("{} has no backward pass", memop_name(c.op)));
  if (const auto problem = memop_shape_problem(c)) fail(problem->why);
}

}  // namespace opbench
