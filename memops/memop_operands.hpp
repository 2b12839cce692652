#pragma once
// What each memory-bound operator reads and writes, written once: the operand list every
// provider binds memory to (the CPU loops, our CUDA kernels), the bytes a row reports (sums over
// these operands: memop.cpp), and the fills that give every provider the very same inputs.
// Providers add only their own workspaces; they describe no operand of their own.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype.hpp"
#include "memops/memop.hpp"

namespace opbench {

enum class OperandRole {
  input,      // read once
  output,     // written once, and compared with the reference under --check
  state,      // read and written in place (the optimizer's parameters and moments)
  workspace,  // a provider's own scratch memory: not the operator's traffic, never checked
};

enum class OperandFill {
  none,       // an output: whatever the operator writes
  uniform,    // uniform in [-scale, scale): the project's fill (fill_uniform), times a power of two
  ids,        // token ids uniform in [0, vocab), drawn anew for every rotating set
  targets,    // target classes uniform in [0, cols)
  fp8_scale,  // the fp8 scale, memop_inputs::kFp8Scale
  derived,    // computed from the other inputs: a forward's saved statistics and output, rope's
              // tables, AdamW's second moment (memop_inputs::adamw_second_moment of m)
  scratch,    // a workspace: neither filled nor read back
};

struct OperandSpec {
  std::string name;
  DType type = DType::fp32;  // storage
  std::int64_t count = 0;    // elements
  OperandRole role = OperandRole::input;
  OperandFill fill = OperandFill::none;
  float scale = 1.0f;   // OperandFill::uniform's bound
  bool shared = false;  // one copy for every rotating set (embedding's table)
  // Elements the operator must touch at least once, when fewer than `count`: the rows of the
  // embedding table its ids look up. -1: all of them.
  std::int64_t touched = -1;
  std::uint64_t seed = 0;  // of its fill: the same on every provider

  bool read() const { return role == OperandRole::input || role == OperandRole::state; }
  bool written() const { return role == OperandRole::output || role == OperandRole::state; }
  bool in_place() const { return role == OperandRole::state; }
  std::int64_t bytes() const { return count * static_cast<std::int64_t>(dtype_size(type)); }
  std::int64_t touched_bytes() const {
    return (touched < 0 ? count : touched) * static_cast<std::int64_t>(dtype_size(type));
  }
};

// The operands of `c`, in an order every provider keeps (the seeds follow it). Activations are
// stored in the case's dtype; statistics, optimizer state and rotary tables in fp32; token ids
// in int64. Copies between memories other than `copy` have none (their bytes are the copy's).
std::vector<OperandSpec> memop_operands(const MemopCase& c);
// Where an elementwise operator's pointers come from (memops/elementwise.hpp), as indices into its
// operands: `in` the inputs it reads, `out` what it writes, the operand an in-place kernel updates
// first (the kernel reads it too). -1: none. The one binding the CPU and CUDA providers share.
struct ElementwiseBinding {
  int in[3] = {-1, -1, -1};
  int out[2] = {-1, -1};
};
template <class Operands>
ElementwiseBinding elementwise_binding(const Operands& operands) {
  ElementwiseBinding b;
  int in = 0, out = 0;
  for (int i = 0; i < static_cast<int>(operands.size()); ++i) {
    const OperandRole role = operands[static_cast<std::size_t>(i)].role;
    if (role == OperandRole::input && in < 3)
      b.in[in++] = i;
    else if ((role == OperandRole::output || role == OperandRole::state) && out < 2)
      b.out[out++] = i;
  }
  return b;
}

// A provider's workspace of `bytes` bytes: one copy for every set, neither filled nor checked.
OperandSpec workspace_operand(std::int64_t bytes);

// A shape the operator cannot take, as {field, why} (rope's heads and head_dim, embedding's
// vocabulary): the one statement of these rules, for validate(), the shape files and providers.
struct ShapeProblem {
  std::string field, why;
};
std::optional<ShapeProblem> memop_shape_problem(const MemopCase& c);

}  // namespace opbench
