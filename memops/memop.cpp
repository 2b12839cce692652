#include "memops/memop.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kF32 = 4, kId = 8;  // fp32 statistics and state; int64 token ids

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

std::int64_t MemopCase::read_bytes() const {
  const auto s = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t n = elements();
  const bool fwd = pass == MemPass::fwd;
  switch (op) {
    case MemOp::add:
      return 2 * n * s;
    case MemOp::rmsnorm:  // fwd: x, w; bwd: dy, x, w, rstd
      return fwd ? n * s + cols * s : 2 * n * s + cols * s + rows * kF32;
    case MemOp::layernorm:  // fwd: x, w, b; bwd: dy, x, w, mean, rstd
      return fwd ? n * s + 2 * cols * s : 2 * n * s + cols * s + 2 * rows * kF32;
    case MemOp::softmax:  // fwd: x; bwd: y, dy
      return fwd ? n * s : 2 * n * s;
    case MemOp::swiglu:  // fwd: g, u; bwd: g, u, dy
      return fwd ? 2 * n * s : 3 * n * s;
    case MemOp::gelu:  // fwd: x; bwd: x, dy
      return fwd ? n * s : 2 * n * s;
    case MemOp::rope:  // q and k (or their gradients), and the fp32 cos and sin tables
      return n * s + rows * head_dim * kF32;
    case MemOp::cross_entropy:  // logits and targets
      return n * s + rows * kId;
    case MemOp::embedding:  // ids, and the rows looked up (fwd) or their gradient (bwd)
      return rows * kId + n * s;
    case MemOp::adamw:  // parameter, gradient, two moments
      return 4 * n * kF32;
    case MemOp::adamw_bf16:  // master weight, bf16 gradient, two moments
      return 3 * n * kF32 + n * 2;
    case MemOp::cast_to_bf16:
      return n * kF32;
    case MemOp::cast_to_fp32:
      return n * 2;
    case MemOp::fp8_quantize:  // bf16 input and the fp32 scale
      return n * 2 + kF32;
    case MemOp::copy:
    case MemOp::h2d:
    case MemOp::d2h:
    case MemOp::h2d_pageable:
    case MemOp::d2h_pageable:
    case MemOp::peer:
    case MemOp::peer_all:
      return copied_bytes();
  }
  return 0;
}

std::int64_t MemopCase::write_bytes() const {
  const auto s = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t n = elements();
  const bool fwd = pass == MemPass::fwd;
  switch (op) {
    case MemOp::add:
      return n * s;
    case MemOp::rmsnorm:  // fwd: y, rstd; bwd: dx, dw
      return fwd ? n * s + rows * kF32 : n * s + cols * s;
    case MemOp::layernorm:  // fwd: y, mean, rstd; bwd: dx, dw, db
      return fwd ? n * s + 2 * rows * kF32 : n * s + 2 * cols * s;
    case MemOp::softmax:
      return n * s;
    case MemOp::swiglu:  // fwd: y; bwd: dg, du
      return fwd ? n * s : 2 * n * s;
    case MemOp::gelu:
      return n * s;
    case MemOp::rope:
      return n * s;
    case MemOp::cross_entropy:  // the logits' gradient and the per-token loss
      return n * s + rows * kF32;
    case MemOp::embedding:  // fwd: the rows; bwd: the whole table's gradient (zero where unused)
      return fwd ? n * s : vocab * cols * s;
    case MemOp::adamw:  // parameter and moments
      return 3 * n * kF32;
    case MemOp::adamw_bf16:  // master weight, moments, and the bf16 parameter
      return 3 * n * kF32 + n * 2;
    case MemOp::cast_to_bf16:
      return n * 2;
    case MemOp::cast_to_fp32:
      return n * kF32;
    case MemOp::fp8_quantize:  // e4m3 output and the amax
      return n + kF32;
    case MemOp::copy:
    case MemOp::h2d:
    case MemOp::d2h:
    case MemOp::h2d_pageable:
    case MemOp::d2h_pageable:
    case MemOp::peer:
    case MemOp::peer_all:
      return copied_bytes();
  }
  return 0;
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
  if (c.op == MemOp::rope) {
    if (c.heads < 1 || c.kv_heads < 1 || c.head_dim < 2 || c.head_dim % 2 != 0)
      fail("rope needs heads and kv_heads of at least 1 and an even head_dim");
    if (c.cols != (c.heads + c.kv_heads) * c.head_dim)
      fail(fmt::format("rope: cols must be (heads + kv_heads) x head_dim = {}, got {}",
                       (c.heads + c.kv_heads) * c.head_dim, c.cols));
  }
  if (c.op == MemOp::embedding && c.vocab < 1) fail("embedding needs a vocab of at least 1");
}

}  // namespace opbench
