// The rotary embedding of q and k (memops/memop_spec.hpp).
#include <fmt/format.h>

#include "memops/memop_check.hpp"
#include "memops/memop_math.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench::memop_specs {

namespace ref = reference_memops;

// q and k (or their gradients), rows = tokens of (heads + kv_heads) heads each, and the fp32 cos
// and sin tables of half a head per token.
void rope_operands(const MemopCase& c, OperandList& list) {
  const bool fwd = c.pass == MemPass::fwd;
  const std::int64_t table = c.rows * (c.head_dim / 2);
  list.in(fwd ? "x" : "dy", c.elements(), c.dtype)
      .filled("cos", table, DType::fp32, OperandFill::derived)
      .filled("sin", table, DType::fp32, OperandFill::derived)
      .out(fwd ? "y" : "dx", c.elements(), c.dtype);
}

std::optional<ShapeProblem> rope_shape_problem(const MemopCase& c) {
  if (c.heads < 1 || c.kv_heads < 1 || c.head_dim < 2 || c.head_dim % 2 != 0)
    return ShapeProblem{"heads",
                        "rope needs heads and kv_heads of at least 1 and an even head_dim"};
  if (c.cols != (c.heads + c.kv_heads) * c.head_dim)
    return ShapeProblem{"cols", fmt::format("rope: cols must be (heads + kv_heads) x head_dim "
                                            "= {}, got {}",
                                            (c.heads + c.kv_heads) * c.head_dim, c.cols)};
  return std::nullopt;
}

void check_rope(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  const bool fwd = c.pass == MemPass::fwd;
  const std::int64_t half = c.head_dim / 2, vectors = c.heads + c.kv_heads;
  auto& out = k.add(fwd ? "y" : "dx", stored_in(c.dtype, kElementwiseTolerance), cols);
  // the tables too: HF's fp32 angles against the exact ones
  const double table_tol = kU * (8.0 + 4.0 * static_cast<double>(rows - 1));
  auto& cos = k.add("cos", table_tol, half);
  auto& sin = k.add("sin", table_tol, half);
  std::vector<double> a, b, e;
  row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0;
    const auto got_cos = k.get("cos", r0 * half, n * half),
               got_sin = k.get("sin", r0 * half, n * half);
    ref::rope(k.get(fwd ? "x" : "dy", r0 * cols, n * cols).data(), got_cos.data(), got_sin.data(),
              n, vectors, c.head_dim, !fwd, zeroed(a, n * cols));
    k.compare(out, k.get(out.name, r0 * cols, n * cols), a.data(), r0 * cols);
    ref::rope_tables(r0, n, c.head_dim, memop_math::kRopeBase, zeroed(b, n * half),
                     zeroed(e, n * half));
    k.compare(cos, got_cos, b.data(), r0 * half);
    k.compare(sin, got_sin, e.data(), r0 * half);
  });
}

std::string rope_rule(const MemopCase& c, const std::string& rounding) {
  return fmt::format("8u{}; cos/sin tables u(8 + 4 x {}) for HF's fp32 angle", rounding,
                     c.rows - 1);
}

}  // namespace opbench::memop_specs
