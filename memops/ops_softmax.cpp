// Softmax and cross-entropy (memops/memop_spec.hpp): the row operators around a row's
// log-sum-exp.
#include <fmt/format.h>

#include "memops/memop_check.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench::memop_specs {

namespace ref = reference_memops;

// fwd: x -> y; bwd: y (a forward's), dy -> dx.
void softmax_operands(const MemopCase& c, OperandList& list) {
  const std::int64_t n = c.elements();
  const DType t = c.dtype;
  if (c.pass == MemPass::fwd)
    list.in("x", n, t, kWideInputs).out("y", n, t);
  else
    list.filled("y", n, t, OperandFill::derived).in("dy", n, t).out("dx", n, t);
}

void check_softmax(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  const bool fwd = c.pass == MemPass::fwd;
  // The forward's exponentials may be the GPU's (memop_check.hpp: the fast-exp allowance).
  const double tol = reduction_tolerance(cols) + (fwd ? kFastExpAllowance : 0.0);
  auto& out = k.add(fwd ? "y" : "dx", stored_in(c.dtype, tol), cols);
  std::vector<double> a;
  row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0, at = r0 * cols;
    if (fwd)
      ref::softmax_fwd(k.get("x", at, n * cols).data(), n, cols, zeroed(a, n * cols));
    else
      ref::softmax_bwd(k.get("y", at, n * cols).data(), k.get("dy", at, n * cols).data(), n, cols,
                       zeroed(a, n * cols));
    k.compare(out, k.get(fwd ? "y" : "dx", at, n * cols), a.data(), at);
  });
}

// The logits and targets -> the logits' gradient and the loss: training fuses both in one pass.
void cross_entropy_operands(const MemopCase& c, OperandList& list) {
  const std::int64_t n = c.elements();
  const DType t = c.dtype;
  list.in("logits", n, t, kWideInputs)
      .filled("targets", c.rows, DType::int64, OperandFill::targets)
      .out("dlogits", n, t)
      .out("loss", c.rows, DType::fp32);
}

void check_cross_entropy(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  const double tol = reduction_tolerance(cols) + kFastExpAllowance;
  auto& grad = k.add("dlogits", stored_in(c.dtype, tol), cols);
  auto& loss = k.add("loss", tol);
  std::vector<double> a, b;
  row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0;
    ref::cross_entropy(k.get("logits", r0 * cols, n * cols).data(),
                       k.read.ids("targets", r0, n).data(), n, cols, rows, zeroed(a, n * cols),
                       zeroed(b, n));
    k.compare(grad, k.get("dlogits", r0 * cols, n * cols), a.data(), r0 * cols);
    k.compare(loss, k.get("loss", r0, n), b.data(), r0);
  });
}

std::string row_rule(const MemopCase& c, const std::string& rounding) {
  const bool exps = c.op == MemOp::cross_entropy || c.pass == MemPass::fwd;
  const std::string fast_exp = fmt::format(" + {:g}u (the GPU's exp)", kFastExpAllowance / kU);
  return reduction_rule(c.cols, "a row", (exps ? fast_exp : "") + rounding);
}

}  // namespace opbench::memop_specs
