#pragma once
// Freivalds' test of a GEMM result without a reference GEMM: for random ±1 vectors x, compare
// C·x with op(A)·(op(B)·x), all in fp64 on the host. O(mn + mk + kn) per vector instead of O(mnk).
//
// Tolerance, per row i of C: |(C·x - A·B·x)_i| <= 8 · u · max(‖C_i‖, ‖C‖_F / sqrt(m)), where
// u = u_out + 2·u_in + sqrt(k)·u_acc + 2·u_fp64: the rounding of the output, of the inputs inside
// the multiplier (tf32), of a k-long accumulation, and of the check itself (its sums are
// compensated, so their error does not grow with n or k). Per-element errors of random sign add up
// like ‖C_i‖·u over a row; a wrong tile, a zeroed or garbage result adds ‖C_i‖-sized terms and
// fails.
#include <cstdint>
#include <string>

#include "gemm/gemm_problem.hpp"

namespace opbench {

struct CheckResult {
  bool passed = false;
  double max_residual = 0;  // max over rows of |C·x - A·B·x|_i / max(‖C_i‖, ‖C‖_F/sqrt(m))
  double tolerance = 0;     // 8·u, the bound max_residual is held to
  std::string detail;       // "residual 3.1e-07 <= 1.2e-05" or what failed
};

struct CheckPrecision {
  double input_roundoff = 0;       // rounding of inputs inside the multiplier (tf32: 2^-11)
  double accumulate_roundoff = 0;  // of the accumulator (fp32: 2^-24)
};

// The precision a GPU GEMM of `t` inputs is held to: tf32 rounds its inputs to 11 bits; fp64
// accumulates in fp64; Hopper's fp8 tensor cores keep about 14 bits while accumulating fast (a
// split accumulator promotes to fp32 every few k-steps: the same bound covers it); the others
// accumulate in fp32.
CheckPrecision gemm_check_precision(DType t);

// a, b, c: host copies of every batch entry, stored as `problem` describes (row-major,
// transposes, batch-strided), of types problem.dtype (a, b) and problem.out_dtype (c).
CheckResult freivalds_check(const GemmProblem& problem, const void* a, const void* b, const void* c,
                            const CheckPrecision& precision, int vectors = 3,
                            std::uint64_t seed = 1);

// Test only (--test-corrupt-result): adds 1000 to element `index` of a result of type `t` —
// decoded, changed and stored in the type, so the change is one the check must see in every
// dtype (flipping a bit could touch a mantissa bit below the tolerance).
void spoil_element_for_test(void* c, DType t, std::size_t index);

}  // namespace opbench
