#pragma once
// One GEMM as it is run: C[m,n] = op(A)[m,k] · op(B)[k,n], batch times, row-major storage (the
// view torch.matmul has). transa = true means A is stored k x m; transb = true means B is
// stored n x k. cuBLASLt, being column-major, is called with A and B swapped.
#include <cstdint>
#include <string>

#include "common/dtype.hpp"

namespace opbench {

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transa = false, transb = false;
  DType dtype = DType::fp32;      // input type (A and B)
  DType out_dtype = DType::fp32;  // C type
  bool beta_nonzero = false;      // C is read as well as written

  // flops = 2·b·m·n·k
  std::int64_t flops() const { return 2 * batch * m * n * k; }
  // read = b·(m·k + k·n)·in_size (+ b·m·n·out_size when beta != 0)
  std::int64_t read_bytes() const;
  // write = b·m·n·out_size
  std::int64_t write_bytes() const;
  std::int64_t io_bytes() const { return read_bytes() + write_bytes(); }

  std::int64_t a_elements() const { return m * k; }  // per batch entry
  std::int64_t b_elements() const { return k * n; }
  std::int64_t c_elements() const { return m * n; }
  // Leading dimensions of the row-major storage.
  std::int64_t lda() const { return transa ? m : k; }
  std::int64_t ldb() const { return transb ? k : n; }
  std::int64_t ldc() const { return n; }
  // Bytes of one full set of operands (A, B, C for every batch entry).
  std::int64_t operand_bytes() const;

  // "NT": transa, transb as letters.
  std::string layout() const;
  // "8192x8192x8192" (m x n x k, with "b4 " in front when batched).
  std::string dims() const;
};

// The output type a benchmark uses for an input type: fp8 GEMMs write bf16, the rest their own
// type.
DType gemm_output_dtype(DType input);

}  // namespace opbench
