#pragma once
// Row-major GEMMs through CBLAS (fp32 and fp64), and the host pools their operands live in: what
// the dense and the expert CPU providers share.
#include <cstdint>
#include <optional>
#include <string>

#include "common/dtype.hpp"
#include "common/host_buffer.hpp"
#include "gemm/gemm_problem.hpp"

namespace opbench {

// Why the CPU providers skip a dtype (nullopt for fp32 and fp64): a floating-point one runs on the
// GPU provider; an integer one on none (cuBLASLt's GEMMs are floating-point too), as an int64
// product of a converted trace is.
std::optional<std::string> cblas_unsupported(DType t);

// C = op(A)·op(B) for every batch entry in turn (β = 0). An empty problem (m or n = 0) writes
// nothing; k = 0 writes zeros, which is what the product is (and CBLAS would reject lda = 0).
void cblas_gemm(const GemmProblem& p, const void* a, const void* b, void* c);

// Rows [row0, row0 + rows) of C for a problem of batch 1: a task a caller can hand to one core.
void cblas_gemm_rows(const GemmProblem& p, const void* a, const void* b, void* c, std::int64_t row0,
                     std::int64_t rows);

// The inputs pool (filled once with random values of the dtype, reused while large enough) and
// the outputs pool (zeroed, so its pages are touched before timing).
class HostOperandPools {
 public:
  void prepare(DType t, std::int64_t input_bytes, std::int64_t output_bytes);
  unsigned char* inputs() const { return static_cast<unsigned char*>(inputs_.data()); }
  unsigned char* outputs() const { return static_cast<unsigned char*>(outputs_.data()); }

 private:
  HostBuffer inputs_, outputs_;
  DType inputs_dtype_ = DType::int8;  // nothing filled yet
};

}  // namespace opbench
