#pragma once
// The cuBLASLt descriptors of one GEMM: types, transposes, layouts, batch strides and the fp8
// accumulation mode. Kept apart from the provider because none of it needs a GPU: the unit
// tests build them on any machine with the toolkit and read every attribute back.
//
// Our problems are row-major; cuBLASLt is column-major, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ:
// m and n swap, A and B swap, and each keeps its own transpose flag.
#include <cublasLt.h>

#include <string>

#include "gemm/gemm_problem.hpp"

namespace opbench {

// Throws run_failure naming the call and cuBLASLt's status.
void lt_check(cublasStatus_t status, const char* call);
// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
std::string lt_status_text(cublasStatus_t status);

struct LtTypes {
  cudaDataType_t ab, c, scale;
  cublasComputeType_t compute;
};
LtTypes lt_types(DType t);

// Owned descriptors; a, b, c are cuBLASLt's A (our B), B (our A) and C = D.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  LtDescriptors() = default;
  ~LtDescriptors();
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
};

// Builds every descriptor of `p`. `fp8_fast_accum` sets CUBLASLT_MATMUL_DESC_FAST_ACCUM on fp8
// problems (ignored for the others). Throws run_failure when a batch count exceeds cuBLASLt's
// int32 limit or cuBLASLt refuses an attribute.
void make_lt_descriptors(const GemmProblem& p, bool fp8_fast_accum, LtDescriptors& d);

}  // namespace opbench
