// cuBLAS and cuBLASLt hooks. Each hook records its GEMM in bench_gemm's row-major convention
// (common/blas_layout.hpp: cuBLAS is column-major, like Fortran BLAS) with the GPU time of the
// call on the handle's stream (gpu_timer.hpp). cuBLAS implements many of its GEMMs with
// cuBLASLt; a cublasLtMatmul made from inside a hooked cuBLAS call passes through uncounted
// (the depth guard), so each user-level call counts once.
//
// cuBLASLt's shapes are not arguments: they are read back from the descriptors with
// cublasLtMatmulDescGetAttribute (CUBLASLT_MATMUL_DESC_TRANSA, _TRANSB, _COMPUTE_TYPE: int32)
// and cublasLtMatrixLayoutGetAttribute (CUBLASLT_MATRIX_LAYOUT_TYPE: uint32, _ORDER: int32,
// _ROWS and _COLS: uint64, _BATCH_COUNT: int32), the types NVIDIA's cuBLAS documentation
// (cuBLASLt API, cublasLtMatmulDescAttributes_t and cublasLtMatrixLayoutAttribute_t) gives. D is
// rows x cols = m x n (column-major order, the default); k is A's cols when A is not transposed,
// its rows when it is.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <atomic>
#include <cstdint>

#include "capture/gpu_timer.hpp"
#include "capture/runtime.hpp"
#include "common/blas_layout.hpp"

namespace opbench::capture {
namespace {

const char* dtype_of(cudaDataType t, cublasComputeType_t compute) {
  switch (t) {
    case CUDA_R_32F:
      // fp32 operands on TF32 tensor cores: bench_gemm's tf32
      return compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? "tf32" : "fp32";
    case CUDA_R_64F:
      return "fp64";
    case CUDA_R_16F:
      return "fp16";
    case CUDA_R_16BF:
      return "bf16";
    case CUDA_R_8F_E4M3:
      return "fp8_e4m3";
    case CUDA_R_8F_E5M2:
      return "fp8_e5m2";
    case CUDA_R_8I:
      return "int8";
    case CUDA_R_32I:
      return "int32";
    default:
      return "other";
  }
}

bool trans(cublasOperation_t op) {
  return op != CUBLAS_OP_N;
}

CaptureKey gemm_key(const char* api, const char* op, const char* dtype, const RowMajorGemm& g,
                    std::int64_t batch) {
  CaptureKey key;
  key.api = api;
  key.kind = "gemm";
  key.op = op;
  key.dtype = dtype;
  key.m = g.m;
  key.n = g.n;
  key.k = g.k;
  key.batch = batch;
  key.transa = g.transa ? 'T' : 'N';
  key.transb = g.transb ? 'T' : 'N';
  return key;
}

cudaStream_t handle_stream(cublasHandle_t handle) {
  static std::atomic<void*> slot{nullptr};
  cudaStream_t s = nullptr;
  real_function<cublasStatus_t (*)(cublasHandle_t, cudaStream_t*)>(slot, "cublasGetStream_v2")(
      handle, &s);
  return s;
}

// Times `call` on `stream` and records `key()` when it succeeded. The shape is worked out
// before the call, for the sampling (gpu_sampling.hpp), and recorded only after it succeeded.
template <class Call, class Key>
auto timed_on(cudaStream_t stream, Call&& call, Key&& key) -> decltype(call()) {
  if (!should_record()) return call();
  CallScope scope;
  const CaptureKey k = key();
  GpuTiming timing = gpu_begin(stream, k);
  const auto status = call();
  if (static_cast<int>(status) == 0) {
    gpu_end(timing, stream, k);
  } else {
    gpu_cancel(timing);
  }
  return status;
}

template <class Fn>
Fn real(std::atomic<void*>& slot, const char* name) {
  return real_function<Fn>(slot, name);
}

}  // namespace
}  // namespace opbench::capture

using namespace opbench::capture;
using opbench::row_major_from_column_major;
using opbench::RowMajorGemm;

#define OPBENCH_REAL(name, ...)                   \
  static std::atomic<void*> slot_##name{nullptr}; \
  auto real_##name = real<__VA_ARGS__>(slot_##name, #name)

OPBENCH_CAPTURE_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                                     cublasOperation_t tb, int m, int n, int k,
                                                     const float* alpha, const float* A, int lda,
                                                     const float* B, int ldb, const float* beta,
                                                     float* C, int ldc) {
  OPBENCH_REAL(cublasSgemm_v2,
               cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                 int, const float*, const float*, int, const float*, int,
                                 const float*, float*, int));
  if (!should_record())
    return real_cublasSgemm_v2(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return timed_on(
      handle_stream(h),
      [&] { return real_cublasSgemm_v2(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); },
      [&] {
        return gemm_key("cublasSgemm_v2", "gemm", "fp32",
                        row_major_from_column_major(trans(ta), trans(tb), m, n, k), 1);
      });
}

OPBENCH_CAPTURE_EXPORT cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                                     cublasOperation_t tb, int m, int n, int k,
                                                     const double* alpha, const double* A, int lda,
                                                     const double* B, int ldb, const double* beta,
                                                     double* C, int ldc) {
  OPBENCH_REAL(cublasDgemm_v2,
               cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                 int, const double*, const double*, int, const double*, int,
                                 const double*, double*, int));
  if (!should_record())
    return real_cublasDgemm_v2(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return timed_on(
      handle_stream(h),
      [&] { return real_cublasDgemm_v2(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); },
      [&] {
        return gemm_key("cublasDgemm_v2", "gemm", "fp64",
                        row_major_from_column_major(trans(ta), trans(tb), m, n, k), 1);
      });
}

OPBENCH_CAPTURE_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta,
                                                  cublasOperation_t tb, int m, int n, int k,
                                                  const __half* alpha, const __half* A, int lda,
                                                  const __half* B, int ldb, const __half* beta,
                                                  __half* C, int ldc) {
  OPBENCH_REAL(cublasHgemm, cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                              int, int, int, const __half*, const __half*, int,
                                              const __half*, int, const __half*, __half*, int));
  if (!should_record())
    return real_cublasHgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return timed_on(
      handle_stream(h),
      [&] { return real_cublasHgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); },
      [&] {
        return gemm_key("cublasHgemm", "gemm", "fp16",
                        row_major_from_column_major(trans(ta), trans(tb), m, n, k), 1);
      });
}

OPBENCH_CAPTURE_EXPORT cublasStatus_t
cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
             const void* alpha, const void* A, cudaDataType at, int lda, const void* B,
             cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
             cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  OPBENCH_REAL(cublasGemmEx,
               cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                 int, const void*, const void*, cudaDataType, int, const void*,
                                 cudaDataType, int, const void*, void*, cudaDataType, int,
                                 cublasComputeType_t, cublasGemmAlgo_t));
  auto call = [&] {
    return real_cublasGemmEx(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc,
                             compute, algo);
  };
  if (!should_record()) return call();
  return timed_on(handle_stream(h), call, [&] {
    return gemm_key("cublasGemmEx", "gemm", dtype_of(at, compute),
                    row_major_from_column_major(trans(ta), trans(tb), m, n, k), 1);
  });
}

OPBENCH_CAPTURE_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType at, int lda, long long int sa, const void* B,
    cudaDataType bt, int ldb, long long int sb, const void* beta, void* C, cudaDataType ct, int ldc,
    long long int sc, int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  OPBENCH_REAL(
      cublasGemmStridedBatchedEx,
      cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                        const void*, const void*, cudaDataType, int, long long int, const void*,
                        cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                        long long int, int, cublasComputeType_t, cublasGemmAlgo_t));
  auto call = [&] {
    return real_cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb,
                                           sb, beta, C, ct, ldc, sc, batch, compute, algo);
  };
  if (!should_record()) return call();
  return timed_on(handle_stream(h), call, [&] {
    return gemm_key("cublasGemmStridedBatchedEx", "gemm_batched", dtype_of(at, compute),
                    row_major_from_column_major(trans(ta), trans(tb), m, n, k), batch);
  });
}

OPBENCH_CAPTURE_EXPORT cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* const A[], cudaDataType at, int lda, const void* const B[],
    cudaDataType bt, int ldb, const void* beta, void* const C[], cudaDataType ct, int ldc,
    int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  OPBENCH_REAL(cublasGemmBatchedEx,
               cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                 int, const void*, const void* const[], cudaDataType, int,
                                 const void* const[], cudaDataType, int, const void*, void* const[],
                                 cudaDataType, int, int, cublasComputeType_t, cublasGemmAlgo_t));
  auto call = [&] {
    return real_cublasGemmBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct,
                                    ldc, batch, compute, algo);
  };
  if (!should_record()) return call();
  return timed_on(handle_stream(h), call, [&] {
    return gemm_key("cublasGemmBatchedEx", "gemm_batched", dtype_of(at, compute),
                    row_major_from_column_major(trans(ta), trans(tb), m, n, k), batch);
  });
}

// A grouped call runs problems of different shapes. When every group has the same row-major n,
// k and layout (the routed experts of an MoE layer: the experts' token counts differ, their
// weights do not), it is keyed as one GEMM of m = Σ group_size·m_i rows, whose FLOPs are the
// call's; otherwise as `gemm_grouped_mixed` with the first group's shape and the problem count
// as batch.
OPBENCH_CAPTURE_EXPORT cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t h, const cublasOperation_t ta[], const cublasOperation_t tb[], const int m[],
    const int n[], const int k[], const void* alpha, const void* const A[], cudaDataType_t at,
    const int lda[], const void* const B[], cudaDataType_t bt, const int ldb[], const void* beta,
    void* const C[], cudaDataType_t ct, const int ldc[], int groups, const int group_size[],
    cublasComputeType_t compute) {
  OPBENCH_REAL(
      cublasGemmGroupedBatchedEx,
      cublasStatus_t(*)(cublasHandle_t, const cublasOperation_t[], const cublasOperation_t[],
                        const int[], const int[], const int[], const void*, const void* const[],
                        cudaDataType_t, const int[], const void* const[], cudaDataType_t,
                        const int[], const void*, void* const[], cudaDataType_t, const int[], int,
                        const int[], cublasComputeType_t));
  auto call = [&] {
    return real_cublasGemmGroupedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta,
                                           C, ct, ldc, groups, group_size, compute);
  };
  if (!should_record() || groups <= 0) return call();
  return timed_on(handle_stream(h), call, [&] {
    const RowMajorGemm first =
        row_major_from_column_major(trans(ta[0]), trans(tb[0]), m[0], n[0], k[0]);
    RowMajorGemm total = first;
    total.m = 0;
    std::int64_t problems = 0;
    bool uniform = true;
    for (int g = 0; g < groups; ++g) {
      const RowMajorGemm r =
          row_major_from_column_major(trans(ta[g]), trans(tb[g]), m[g], n[g], k[g]);
      uniform = uniform && r.n == first.n && r.k == first.k && r.transa == first.transa &&
                r.transb == first.transb;
      total.m += r.m * group_size[g];
      problems += group_size[g];
    }
    if (uniform)
      return gemm_key("cublasGemmGroupedBatchedEx", "gemm_grouped", dtype_of(at, compute), total,
                      1);
    return gemm_key("cublasGemmGroupedBatchedEx", "gemm_grouped_mixed", dtype_of(at, compute),
                    first, problems);
  });
}

namespace {

template <class T>
T matmul_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, T fallback) {
  static std::atomic<void*> slot{nullptr};
  auto get = real<cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void*,
                                     size_t, size_t*)>(slot, "cublasLtMatmulDescGetAttribute");
  T v = fallback;
  size_t written = 0;
  if (get(d, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS || written != sizeof(v))
    return fallback;
  return v;
}

template <class T>
T layout_attr(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T fallback) {
  static std::atomic<void*> slot{nullptr};
  auto get = real<cublasStatus_t (*)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*,
                                     size_t, size_t*)>(slot, "cublasLtMatrixLayoutGetAttribute");
  T v = fallback;
  size_t written = 0;
  if (get(l, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS || written != sizeof(v))
    return fallback;
  return v;
}

CaptureKey lt_key(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t d) {
  const auto ta = static_cast<cublasOperation_t>(
      matmul_attr<std::int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N));
  const auto tb = static_cast<cublasOperation_t>(
      matmul_attr<std::int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N));
  const auto compute = static_cast<cublasComputeType_t>(
      matmul_attr<std::int32_t>(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLAS_COMPUTE_32F));
  const auto a_type =
      static_cast<cudaDataType>(layout_attr<std::uint32_t>(a, CUBLASLT_MATRIX_LAYOUT_TYPE, 0));
  const auto m =
      static_cast<std::int64_t>(layout_attr<std::uint64_t>(d, CUBLASLT_MATRIX_LAYOUT_ROWS, 0));
  const auto n =
      static_cast<std::int64_t>(layout_attr<std::uint64_t>(d, CUBLASLT_MATRIX_LAYOUT_COLS, 0));
  const auto k = static_cast<std::int64_t>(layout_attr<std::uint64_t>(
      a, trans(ta) ? CUBLASLT_MATRIX_LAYOUT_ROWS : CUBLASLT_MATRIX_LAYOUT_COLS, 0));
  const std::int64_t batch = std::max<std::int32_t>(
      1, layout_attr<std::int32_t>(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1));
  const std::int32_t order =
      layout_attr<std::int32_t>(d, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL);
  // Row-ordered layouts describe the row-major GEMM directly; column order (the default, and
  // what frameworks use) is converted as every column-major call is.
  const RowMajorGemm g = order == CUBLASLT_ORDER_ROW
                             ? RowMajorGemm{m, n, k, trans(ta), trans(tb)}
                             : row_major_from_column_major(trans(ta), trans(tb), m, n, k);
  return gemm_key("cublasLtMatmul", batch > 1 ? "gemm_batched" : "gemm", dtype_of(a_type, compute),
                  g, batch);
}

}  // namespace

OPBENCH_CAPTURE_EXPORT cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lt, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
               cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta,
               const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
               const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) {
  OPBENCH_REAL(
      cublasLtMatmul,
      cublasStatus_t(*)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                        cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,
                        const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                        const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t));
  auto call = [&] {
    return real_cublasLtMatmul(lt, desc, alpha, A, a, B, b, beta, C, c, D, d, algo, workspace,
                               workspace_bytes, stream);
  };
  if (!should_record()) return call();
  return timed_on(stream, call, [&] { return lt_key(desc, a, d); });
}
