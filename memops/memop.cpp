#include "memops/memop.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// An operator's row: its name, whether training runs its backward, the one dtype it takes where
// it fixes one (none: fp32, bf16 or fp16), and whether it copies between memories.
struct OpInfo {
  OpInfo(MemOp op, const char* name, bool backward = false,
         std::optional<DType> dtype = std::nullopt, bool copy = false)
      : op(op), name(name), backward(backward), dtype(dtype), copy(copy) {}
  MemOp op;
  const char* name;
  bool backward;
  std::optional<DType> dtype;
  bool copy;
};

const std::vector<OpInfo>& op_table() {
  constexpr auto fp32 = DType::fp32, bf16 = DType::bf16;
  static const std::vector<OpInfo> table{
      {MemOp::add, "add"},
      {MemOp::rmsnorm, "rmsnorm", true},
      {MemOp::layernorm, "layernorm", true},
      // The forward that TransformerEngine, Apex and Liger fuse: the residual add before a norm.
      {MemOp::add_rmsnorm, "add_rmsnorm"},
      {MemOp::softmax, "softmax", true},
      {MemOp::swiglu, "swiglu", true},
      {MemOp::gelu, "gelu", true},
      {MemOp::rope, "rope", true},
      {MemOp::cross_entropy, "cross_entropy"},
      {MemOp::embedding, "embedding", true},
      // The optimizer state is fp32 whatever the model trains in.
      {MemOp::adamw, "adamw", false, fp32},
      {MemOp::adamw_bf16, "adamw_bf16", false, fp32},
      {MemOp::cast_to_bf16, "cast_to_bf16", false, fp32},
      {MemOp::cast_to_fp32, "cast_to_fp32", false, bf16},
      {MemOp::fp8_quantize, "fp8_quantize", false, bf16},
      {MemOp::mul, "mul"},
      {MemOp::scale, "scale"},
      {MemOp::sqrt, "sqrt"},
      {MemOp::silu, "silu", true},
      {MemOp::fill, "fill"},
      {MemOp::scale_inplace, "scale_inplace"},
      {MemOp::axpy_inplace, "axpy_inplace"},
      {MemOp::addcdiv_inplace, "addcdiv_inplace"},
      {MemOp::copy, "copy", false, std::nullopt, true},
      {MemOp::h2d, "h2d", false, std::nullopt, true},
      {MemOp::d2h, "d2h", false, std::nullopt, true},
      {MemOp::h2d_pageable, "h2d_pageable", false, std::nullopt, true},
      {MemOp::d2h_pageable, "d2h_pageable", false, std::nullopt, true},
      {MemOp::peer, "peer", false, std::nullopt, true},
      {MemOp::peer_all, "peer_all", false, std::nullopt, true},
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
  return info(op).copy;
}

bool memop_accepts(MemOp op, DType t) {
  if (const auto fixed = info(op).dtype) return t == *fixed;
  return t == DType::fp32 || t == DType::bf16 || t == DType::fp16;
}

DType memop_dtype(MemOp op, DType wanted) {
  return info(op).dtype.value_or(wanted);
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

}  // namespace opbench
