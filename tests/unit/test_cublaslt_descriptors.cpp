// cuBLASLt descriptors need no GPU: built here and read back attribute by attribute.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "common/cuda/device.hpp"
#include "common/error.hpp"
#include "gemm/cublas_api.hpp"
#include "gemm/cublaslt_descriptors.hpp"

using namespace opbench;

namespace {

// One attribute read back through cuBLASLt's getter for its descriptor kind.
template <typename T, class Getter, class Desc, class Attr>
T read_attr(Getter get, Desc d, Attr attr) {
  T v{};
  std::size_t written = 0;
  REQUIRE(get(d, attr, &v, sizeof(v), &written) == CUBLAS_STATUS_SUCCESS);
  return v;
}
template <typename T>
T matmul_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr) {
  return read_attr<T>(cublaslt().cublasLtMatmulDescGetAttribute, d, attr);
}
template <typename T>
T layout_attr(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr) {
  return read_attr<T>(cublaslt().cublasLtMatrixLayoutGetAttribute, l, attr);
}

struct Layout {
  std::uint64_t rows, cols;
  std::int64_t ld;
  cudaDataType_t type;
};
Layout read_layout(cublasLtMatrixLayout_t l) {
  return {layout_attr<std::uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_ROWS),
          layout_attr<std::uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_COLS),
          layout_attr<std::int64_t>(l, CUBLASLT_MATRIX_LAYOUT_LD),
          static_cast<cudaDataType_t>(layout_attr<std::uint32_t>(l, CUBLASLT_MATRIX_LAYOUT_TYPE))};
}

}  // namespace

TEST_CASE("cuBLASLt descriptors of a row-major NT GEMM: swapped operands, each keeps its flag") {
  // C[m=128, n=256] = A[128 x 64] · B stored n x k (transb): cuBLASLt computes Cᵀ = B'·A'.
  GemmProblem p{128, 256, 64, 1, false, true, DType::bf16, DType::bf16, false};
  LtDescriptors d;
  make_lt_descriptors(p, true, d);
  CHECK(matmul_attr<std::int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSA) == CUBLAS_OP_T);
  CHECK(matmul_attr<std::int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_N);
  CHECK(matmul_attr<std::int32_t>(d.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) == CUBLAS_COMPUTE_32F);
  CHECK(matmul_attr<std::int32_t>(d.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE) == CUDA_R_32F);
  // cuBLASLt's A is our B, stored n x k row-major = k x n column-major: rows k, cols n, ld k.
  auto a = read_layout(d.a);
  CHECK((a.rows == 64 && a.cols == 256 && a.ld == 64 && a.type == CUDA_R_16BF));
  auto b = read_layout(d.b);  // our A, m x k row-major: k x m column-major
  CHECK((b.rows == 64 && b.cols == 128 && b.ld == 64));
  auto c = read_layout(d.c);  // C m x n row-major: n x m column-major
  CHECK((c.rows == 256 && c.cols == 128 && c.ld == 256 && c.type == CUDA_R_16BF));
  CHECK(layout_attr<std::int32_t>(d.c, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) == 1);
}

TEST_CASE("cuBLASLt descriptors: batch strides, fp8 accumulation and types") {
  GemmProblem p{32, 48, 16, 4, true, false, DType::fp8_e4m3, DType::bf16, false};
  for (bool fast : {true, false}) {
    LtDescriptors d;
    make_lt_descriptors(p, fast, d);
    CHECK(matmul_attr<std::int8_t>(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM) == (fast ? 1 : 0));
    CHECK(matmul_attr<std::int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_T);  // our A
    CHECK(layout_attr<std::int32_t>(d.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) == 4);
    CHECK(layout_attr<std::int64_t>(d.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) == 16 * 48);
    CHECK(layout_attr<std::int64_t>(d.b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) == 32 * 16);
    CHECK(layout_attr<std::int64_t>(d.c, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) == 32 * 48);
    CHECK(read_layout(d.a).type == CUDA_R_8F_E4M3);
    CHECK(read_layout(d.c).type == CUDA_R_16BF);
  }
  GemmProblem tf32{64, 64, 64, 1, false, false, DType::tf32, DType::tf32, false};
  LtDescriptors d;
  make_lt_descriptors(tf32, true, d);
  CHECK(matmul_attr<std::int32_t>(d.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) ==
        CUBLAS_COMPUTE_32F_FAST_TF32);
  CHECK(matmul_attr<std::int8_t>(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM) == 0);  // fp8 only
}

TEST_CASE("a batch past cuBLASLt's int32 count is refused before any cast") {
  GemmProblem p{
      8,     8,     8,           std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1,
      false, false, DType::bf16, DType::bf16,
      false};
  LtDescriptors d;
  CHECK_THROWS_WITH(make_lt_descriptors(p, true, d),
                    Catch::Contains("batch 2147483648 exceeds cuBLASLt's batch count limit"));
}

TEST_CASE("no GPU, said in plain words: a missing driver is not a driver fault") {
  CHECK(no_gpu_reason(cudaErrorInsufficientDriver, false) ==
        "no NVIDIA driver or GPU found (libcuda.so.1 is not installed)");
  CHECK_THAT(no_gpu_reason(cudaErrorInsufficientDriver, true),
             Catch::StartsWith("the NVIDIA driver is too old for this build's CUDA runtime"));
  CHECK_THAT(no_gpu_reason(cudaErrorNoDevice, true), Catch::StartsWith("no NVIDIA GPU found"));
}

// cuBLAS is opened on first use, not linked (gemm/cublas_api.hpp): the sonames of the major
// version compiled against, every listed function found, and a library that is not there a
// one-line error naming it.
TEST_CASE("cuBLAS and cuBLASLt are opened by their sonames, every listed function found") {
  CHECK(cublaslt_library_name() == "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  CHECK(cublas_library_name() == "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  const CublasLtCalls& lt = cublaslt();
  CHECK(lt.cublasLtMatmul != nullptr);
  CHECK(lt.cublasLtMatmulAlgoGetHeuristic != nullptr);
  CHECK(static_cast<int>(lt.cublasLtGetVersion() / 10000) == CUBLAS_VER_MAJOR);
  const CublasCalls& blas = cublas();
  CHECK(blas.cublasGemmGroupedBatchedEx != nullptr);
  CHECK(blas.cublasGemmStridedBatchedEx != nullptr);
  CHECK(std::string(blas.cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) ==
        "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK_THROWS_WITH(
      open_cuda_library("libcublasLt.so.0"),
      Catch::StartsWith("cannot load libcublasLt.so.0 (") && Catch::Contains("LD_LIBRARY_PATH"));
}
