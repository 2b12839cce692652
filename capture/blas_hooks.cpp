// CPU BLAS hooks: Fortran sgemm_/dgemm_ (what PyTorch's CPU build calls through libblas.so.3),
// CBLAS cblas_sgemm/cblas_dgemm (numpy), and OpenBLAS's bf16 sbgemm where a library has it. Each
// hook calls the real routine with its arguments untouched and records the call in bench_gemm's
// row-major convention (common/blas_layout.hpp), so a captured row is a bench_gemm case as is.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "capture/runtime.hpp"
#include "common/blas_layout.hpp"

namespace opbench::capture {
namespace {

// CBLAS's enumerations (cblas.h): the values are fixed by the standard, so the header (and the
// library that ships it) is not needed to build the hooks.
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;

void record_gemm(const char* api, const char* dtype, const RowMajorGemm& g, std::uint64_t t0) {
  const std::uint64_t t1 = now_ns();
  CaptureKey key;
  key.api = api;
  key.kind = "gemm";
  key.op = "gemm";
  key.dtype = dtype;
  key.m = g.m;
  key.n = g.n;
  key.k = g.k;
  key.batch = 1;
  key.transa = g.transa ? 'T' : 'N';
  key.transb = g.transb ? 'T' : 'N';
  record(key, static_cast<double>(t1 - t0));
}

RowMajorGemm from_fortran(const char* ta, const char* tb, const int* m, const int* n,
                          const int* k) {
  return row_major_from_column_major(blas_trans(*ta), blas_trans(*tb), *m, *n, *k);
}

RowMajorGemm from_cblas(int order, int ta, int tb, int m, int n, int k) {
  const bool transa = ta != kCblasNoTrans, transb = tb != kCblasNoTrans;
  if (order == kCblasRowMajor) return RowMajorGemm{m, n, k, transa, transb};
  return row_major_from_column_major(transa, transb, m, n, k);
}

std::atomic<void*> real_sgemm{nullptr}, real_dgemm{nullptr}, real_sbgemm{nullptr};
std::atomic<void*> real_cblas_sgemm{nullptr}, real_cblas_dgemm{nullptr}, real_cblas_sbgemm{nullptr};

// The Fortran routines take two hidden string lengths after their arguments (gfortran's ABI for
// the two CHARACTER arguments); they are forwarded as received, whether a C caller passed them
// or not, so the real routine sees exactly what it would have seen.
template <class T, class S>
using fortran_gemm = void (*)(const char*, const char*, const int*, const int*, const int*,
                              const S*, const T*, const int*, const T*, const int*, const S*, S*,
                              const int*, std::size_t, std::size_t);
template <class T, class S>
using cblas_gemm = void (*)(int, int, int, int, int, int, S, const T*, int, const T*, int, S, S*,
                            int);

template <class T, class S>
void fortran_hook(std::atomic<void*>& slot, const char* api, const char* dtype, const char* ta,
                  const char* tb, const int* m, const int* n, const int* k, const S* alpha,
                  const T* a, const int* lda, const T* b, const int* ldb, const S* beta, S* c,
                  const int* ldc, std::size_t la, std::size_t lb) {
  auto real = real_function<fortran_gemm<T, S>>(slot, api);
  if (!should_record()) return real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
  CallScope scope;
  const std::uint64_t t0 = now_ns();
  real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
  record_gemm(api, dtype, from_fortran(ta, tb, m, n, k), t0);
}

template <class T, class S>
void cblas_hook(std::atomic<void*>& slot, const char* api, const char* dtype, int order, int ta,
                int tb, int m, int n, int k, S alpha, const T* a, int lda, const T* b, int ldb,
                S beta, S* c, int ldc) {
  auto real = real_function<cblas_gemm<T, S>>(slot, api);
  if (!should_record()) return real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  CallScope scope;
  const std::uint64_t t0 = now_ns();
  real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  record_gemm(api, dtype, from_cblas(order, ta, tb, m, n, k), t0);
}

}  // namespace
}  // namespace opbench::capture

using opbench::capture::cblas_hook;
using opbench::capture::fortran_hook;
using bf16_bits = std::uint16_t;  // OpenBLAS's bfloat16: the upper half of an fp32

OPBENCH_CAPTURE_EXPORT void sgemm_(const char* ta, const char* tb, const int* m, const int* n,
                                   const int* k, const float* alpha, const float* a, const int* lda,
                                   const float* b, const int* ldb, const float* beta, float* c,
                                   const int* ldc, std::size_t la, std::size_t lb) {
  fortran_hook<float, float>(opbench::capture::real_sgemm, "sgemm_", "fp32", ta, tb, m, n, k, alpha,
                             a, lda, b, ldb, beta, c, ldc, la, lb);
}

OPBENCH_CAPTURE_EXPORT void dgemm_(const char* ta, const char* tb, const int* m, const int* n,
                                   const int* k, const double* alpha, const double* a,
                                   const int* lda, const double* b, const int* ldb,
                                   const double* beta, double* c, const int* ldc, std::size_t la,
                                   std::size_t lb) {
  fortran_hook<double, double>(opbench::capture::real_dgemm, "dgemm_", "fp64", ta, tb, m, n, k,
                               alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
}

OPBENCH_CAPTURE_EXPORT void sbgemm_(const char* ta, const char* tb, const int* m, const int* n,
                                    const int* k, const float* alpha, const bf16_bits* a,
                                    const int* lda, const bf16_bits* b, const int* ldb,
                                    const float* beta, float* c, const int* ldc, std::size_t la,
                                    std::size_t lb) {
  fortran_hook<bf16_bits, float>(opbench::capture::real_sbgemm, "sbgemm_", "bf16", ta, tb, m, n, k,
                                 alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
}

OPBENCH_CAPTURE_EXPORT void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                                        const float* a, int lda, const float* b, int ldb,
                                        float beta, float* c, int ldc) {
  cblas_hook<float, float>(opbench::capture::real_cblas_sgemm, "cblas_sgemm", "fp32", order, ta, tb,
                           m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

OPBENCH_CAPTURE_EXPORT void cblas_dgemm(int order, int ta, int tb, int m, int n, int k,
                                        double alpha, const double* a, int lda, const double* b,
                                        int ldb, double beta, double* c, int ldc) {
  cblas_hook<double, double>(opbench::capture::real_cblas_dgemm, "cblas_dgemm", "fp64", order, ta,
                             tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

OPBENCH_CAPTURE_EXPORT void cblas_sbgemm(int order, int ta, int tb, int m, int n, int k,
                                         float alpha, const bf16_bits* a, int lda,
                                         const bf16_bits* b, int ldb, float beta, float* c,
                                         int ldc) {
  cblas_hook<bf16_bits, float>(opbench::capture::real_cblas_sbgemm, "cblas_sbgemm", "bf16", order,
                               ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
