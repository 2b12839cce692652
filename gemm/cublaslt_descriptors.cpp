#include "gemm/cublaslt_descriptors.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "common/error.hpp"
#include "gemm/cublas_api.hpp"

namespace opbench {
namespace {

void make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::int64_t rows,
                 std::int64_t cols, std::int64_t batch) {
  lt_check(cublaslt().cublasLtMatrixLayoutCreate(layout, type, static_cast<std::uint64_t>(rows),
                                                 static_cast<std::uint64_t>(cols), rows),
           "MatrixLayoutCreate");
  if (batch > 1) {
    auto count = static_cast<std::int32_t>(batch);  // checked against INT32_MAX by the caller
    std::int64_t stride = rows * cols;
    lt_check(cublaslt().cublasLtMatrixLayoutSetAttribute(
                 *layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
             "MatrixLayoutSetAttribute(BATCH_COUNT)");
    lt_check(cublaslt().cublasLtMatrixLayoutSetAttribute(
                 *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
             "MatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
}

}  // namespace

std::string lt_status_text(cublasStatus_t status) {
  return fmt::format("{} ({})", cublaslt().cublasLtGetStatusName(status),
                     cublaslt().cublasLtGetStatusString(status));
}

void lt_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw run_failure(fmt::format("cuBLASLt {} failed: {}", call, lt_status_text(status)));
}

LtTypes lt_types(DType t) {
  switch (t) {
    case DType::fp64:
      return {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case DType::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case DType::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::fp8_e4m3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    default:
      throw std::logic_error("lt_types: unsupported dtype");
  }
}

LtDescriptors::~LtDescriptors() {
  if (op) cublaslt().cublasLtMatmulDescDestroy(op);
  if (a) cublaslt().cublasLtMatrixLayoutDestroy(a);
  if (b) cublaslt().cublasLtMatrixLayoutDestroy(b);
  if (c) cublaslt().cublasLtMatrixLayoutDestroy(c);
}

void make_lt_descriptors(const GemmProblem& p, bool fp8_fast_accum, LtDescriptors& d) {
  if (p.batch > std::numeric_limits<std::int32_t>::max())
    throw run_failure(fmt::format("batch {} exceeds cuBLASLt's batch count limit of {}", p.batch,
                                  std::numeric_limits<std::int32_t>::max()));
  const LtTypes types = lt_types(p.dtype);
  lt_check(cublaslt().cublasLtMatmulDescCreate(&d.op, types.compute, types.scale),
           "MatmulDescCreate");
  const cublasOperation_t op_a = p.transb ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our B
  const cublasOperation_t op_b = p.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt_check(cublaslt().cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
                                                     sizeof(op_a)),
           "MatmulDescSetAttribute(TRANSA)");
  lt_check(cublaslt().cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
                                                     sizeof(op_b)),
           "MatmulDescSetAttribute(TRANSB)");
  if (p.dtype == DType::fp8_e4m3) {
    const std::int8_t fast = fp8_fast_accum ? 1 : 0;
    lt_check(cublaslt().cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                       sizeof(fast)),
             "MatmulDescSetAttribute(FAST_ACCUM)");
  }
  // Column-major shapes of the stored matrices (a row-major R x C matrix is column-major C x R).
  make_layout(&d.a, types.ab, p.transb ? p.k : p.n, p.transb ? p.n : p.k, p.batch);
  make_layout(&d.b, types.ab, p.transa ? p.m : p.k, p.transa ? p.k : p.m, p.batch);
  make_layout(&d.c, types.c, p.n, p.m, p.batch);
}

}  // namespace opbench
