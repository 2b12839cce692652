#pragma once
// A column-major BLAS call (Fortran sgemm_, cuBLAS, cuBLASLt) seen as the row-major GEMM bench_gemm
// runs (gemm/gemm_problem.hpp, docs/formulas.md#gemm), as a pure inline function: the capture
// library (an LD_PRELOAD object that links nothing of the project) and the GEMM providers convert
// with the same code.
//
// Column-major C[M,N] = op(A)·op(B) occupies the memory of the row-major matrix Cᵀ[N,M], and
// Cᵀ = op(B)ᵀ·op(A)ᵀ. Column-major B stored untransposed is, read row-major, Bᵀ: exactly the left
// operand needed, so the row-major GEMM is m = N, n = M, k = K, its A is the call's B with
// transa = the call's transb, its B the call's A with transb = the call's transa. Example:
// torch.nn.Linear's forward Y[T,out] = X[T,in]·W[out,in]ᵀ calls sgemm_("T", "N", out, T, in, W, X):
// row-major m = T, n = out, k = in, layout NT, bench_gemm's fprop.
#include <cstdint>

namespace opbench {

struct RowMajorGemm {
  std::int64_t m = 0, n = 0, k = 0;
  bool transa = false, transb = false;
};

// BLAS's transpose characters: 'N'/'n' no transpose; 'T'/'t' and 'C'/'c' (conjugate transpose,
// the same for real types) transpose.
constexpr bool blas_trans(char c) {
  return c == 'T' || c == 't' || c == 'C' || c == 'c';
}

constexpr RowMajorGemm row_major_from_column_major(bool transa, bool transb, std::int64_t m,
                                                   std::int64_t n, std::int64_t k) {
  return RowMajorGemm{n, m, k, transb, transa};
}

// The inverse: the column-major call that runs a row-major GEMM (swap the operands and m, n).
constexpr RowMajorGemm column_major_from_row_major(const RowMajorGemm& r) {
  return RowMajorGemm{r.n, r.m, r.k, r.transb, r.transa};
}

}  // namespace opbench
