// The norms (memops/memop_spec.hpp): RMSNorm and LayerNorm, forward and backward, and the
// residual add fused before RMSNorm.
#include <fmt/format.h>

#include <algorithm>

#include "memops/memop_check.hpp"
#include "memops/memop_math.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench::memop_specs {

namespace ref = reference_memops;

// fwd: x, w (, b) -> y (, mean), rstd; bwd: dy, x, w (, mean), rstd -> dx, dw (, db). The
// backward's saved statistics come from its forward on the same x.
void norm_operands(const MemopCase& c, OperandList& list) {
  const DType t = c.dtype, f32 = DType::fp32;
  const std::int64_t n = c.elements(), rows = c.rows, cols = c.cols;
  const bool layer = c.op == MemOp::layernorm;
  if (c.pass == MemPass::fwd) {
    list.in("x", n, t).in("w", cols, t);
    if (layer) list.in("b", cols, t);
    list.out("y", n, t);
    if (layer) list.out("mean", rows, f32);
    list.out("rstd", rows, f32);
  } else {
    list.in("dy", n, t).in("x", n, t).in("w", cols, t);
    if (layer) list.filled("mean", rows, f32, OperandFill::derived);
    list.filled("rstd", rows, f32, OperandFill::derived).out("dx", n, t).out("dw", cols, t);
    if (layer) list.out("db", cols, t);
  }
}

namespace {

void check_norm_fwd(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  const bool rms = c.op == MemOp::rmsnorm;
  const double eps = rms ? memop_math::kRmsNormEps : memop_math::kLayerNormEps;
  const auto w = k.get("w", 0, cols);
  const double tol = reduction_tolerance(cols);
  auto& y = k.add("y", stored_in(c.dtype, tol), cols);
  auto& rstd = k.add("rstd", tol);
  OutputCheck* mean = rms ? nullptr : &k.add("mean", tol);
  const auto bias = rms ? std::vector<float>() : k.get("b", 0, cols);
  std::vector<double> a, b, e;
  row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0;
    const auto x = k.get("x", r0 * cols, n * cols);
    if (rms)
      ref::rmsnorm_fwd(x.data(), w.data(), n, cols, eps, zeroed(a, n * cols), zeroed(b, n));
    else
      ref::layernorm_fwd(x.data(), w.data(), bias.data(), n, cols, eps, zeroed(a, n * cols),
                         zeroed(e, n), zeroed(b, n));
    k.compare(y, k.get("y", r0 * cols, n * cols), a.data(), r0 * cols);
    k.compare(rstd, k.get("rstd", r0, n), b.data(), r0);
    if (mean) k.compare(*mean, k.get("mean", r0, n), e.data(), r0);
  });
}

}  // namespace

namespace {

void check_norm_bwd(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  const bool rms = c.op == MemOp::rmsnorm;
  const auto w = k.get("w", 0, cols);
  const double tol = reduction_tolerance(std::max(rows, cols));
  auto& dx = k.add("dx", stored_in(c.dtype, tol), cols);
  std::vector<double> dw(static_cast<std::size_t>(cols)), db(dw.size()), a;
  row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0, at = r0 * cols;
    const auto dy = k.get("dy", at, n * cols), x = k.get("x", at, n * cols),
               rstd = k.get("rstd", r0, n);
    if (rms) {
      ref::rmsnorm_bwd(dy.data(), x.data(), w.data(), rstd.data(), n, cols, zeroed(a, n * cols),
                       dw.data());
    } else {
      const auto mean = k.get("mean", r0, n);
      ref::layernorm_bwd(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), n, cols,
                         zeroed(a, n * cols), dw.data(), db.data());
    }
    k.compare(dx, k.get("dx", at, n * cols), a.data(), at);
  });
  k.compare(k.add("dw", stored_in(c.dtype, tol)), k.get("dw", 0, cols), dw.data(), 0);
  if (!rms) k.compare(k.add("db", stored_in(c.dtype, tol)), k.get("db", 0, cols), db.data(), 0);
}

}  // namespace

void check_norm(ReferenceCheck& k) {
  k.c.pass == MemPass::fwd ? check_norm_fwd(k) : check_norm_bwd(k);
}

// The residual add fused before RMSNorm, forward: x, residual, w -> y, the sum h = x + residual
// (the residual stream's next value, which the frameworks return beside y) and rstd.
void add_rmsnorm_operands(const MemopCase& c, OperandList& list) {
  const DType t = c.dtype;
  const std::int64_t n = c.elements();
  list.in("x", n, t)
      .in("residual", n, t)
      .in("w", c.cols, t)
      .out("y", n, t)
      .out("residual_out", n, t)
      .out("rstd", c.rows, DType::fp32);
}

// y and rstd are a row's reduction; residual_out is one rounding of the sum.
void check_add_rmsnorm(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t cols = c.cols;
  const auto w = k.get("w", 0, cols);
  const double tol = reduction_tolerance(cols);
  auto& y = k.add("y", stored_in(c.dtype, tol), cols);
  auto& sum = k.add("residual_out", stored_in(c.dtype, kElementwiseTolerance), cols);
  auto& rstd = k.add("rstd", tol);
  std::vector<double> a, b, e;
  row_blocks(c.rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0, at = r0 * cols;
    ref::add_rmsnorm_fwd(k.get("x", at, n * cols).data(), k.get("residual", at, n * cols).data(),
                         w.data(), n, cols, memop_math::kRmsNormEps, zeroed(a, n * cols),
                         zeroed(e, n * cols), zeroed(b, n));
    k.compare(y, k.get("y", at, n * cols), a.data(), at);
    k.compare(sum, k.get("residual_out", at, n * cols), e.data(), at);
    k.compare(rstd, k.get("rstd", r0, n), b.data(), r0);
  });
}

std::string add_rmsnorm_rule(const MemopCase& c, const std::string& rounding) {
  return reduction_rule(c.cols, "a row", rounding) + "; residual_out 8u" + rounding;
}

std::string norm_rule(const MemopCase& c, const std::string& rounding) {
  if (c.pass == MemPass::bwd)
    return reduction_rule(std::max(c.rows, c.cols), "the longer of a row and the rows dw sums",
                          rounding);
  return reduction_rule(c.cols, "a row", rounding);
}

}  // namespace opbench::memop_specs
