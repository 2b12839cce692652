#include "gemm/cblas_gemm.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <cstring>

namespace opbench {

std::optional<std::string> cblas_unsupported(DType t) {
  if (t == DType::fp32 || t == DType::fp64) return std::nullopt;
  if (is_floating(t))
    return fmt::format("the OpenBLAS provider runs fp32 and fp64; {} needs --backend cuda",
                       dtype_name(t));
  return fmt::format(
      "the OpenBLAS provider runs fp32 and fp64, and no provider runs {} GEMMs (cuBLASLt's are "
      "floating-point too)",
      dtype_name(t));
}
namespace {

constexpr std::uint64_t kFillSeed = 20261121;

}  // namespace

void cblas_gemm_rows(const GemmProblem& p, const void* a, const void* b, void* c, std::int64_t row0,
                     std::int64_t rows) {
  if (rows <= 0 || p.n == 0) return;
  const std::size_t out_size = dtype_size(p.out_dtype);
  auto* c_rows =
      static_cast<unsigned char*>(c) + row0 * p.ldc() * static_cast<std::int64_t>(out_size);
  if (p.k == 0) {
    std::memset(c_rows, 0, static_cast<std::size_t>(rows * p.n) * out_size);
    return;
  }
  // Row i of op(A) starts at row i of A when A is stored m x k, at column i when stored k x m.
  const std::int64_t a_step = p.transa ? 1 : p.lda();
  const auto ta = p.transa ? CblasTrans : CblasNoTrans;
  const auto tb = p.transb ? CblasTrans : CblasNoTrans;
  if (p.dtype == DType::fp32) {
    cblas_sgemm(CblasRowMajor, ta, tb, rows, p.n, p.k, 1.0f,
                static_cast<const float*>(a) + row0 * a_step, p.lda(), static_cast<const float*>(b),
                p.ldb(), 0.0f, reinterpret_cast<float*>(c_rows), p.ldc());
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, rows, p.n, p.k, 1.0,
                static_cast<const double*>(a) + row0 * a_step, p.lda(),
                static_cast<const double*>(b), p.ldb(), 0.0, reinterpret_cast<double*>(c_rows),
                p.ldc());
  }
}

void cblas_gemm(const GemmProblem& p, const void* a, const void* b, void* c) {
  const auto in = static_cast<std::int64_t>(dtype_size(p.dtype));
  const auto out = static_cast<std::int64_t>(dtype_size(p.out_dtype));
  for (std::int64_t i = 0; i < p.batch; ++i)
    cblas_gemm_rows(p, static_cast<const unsigned char*>(a) + i * p.a_elements() * in,
                    static_cast<const unsigned char*>(b) + i * p.b_elements() * in,
                    static_cast<unsigned char*>(c) + i * p.c_elements() * out, 0, p.m);
}

void HostOperandPools::prepare(DType t, std::int64_t input_bytes, std::int64_t output_bytes) {
  if (static_cast<std::size_t>(input_bytes) > inputs_.bytes() || t != inputs_dtype_) {
    inputs_ = HostBuffer();  // free before allocating the larger pool
    inputs_ = HostBuffer(static_cast<std::size_t>(input_bytes));
    fill_uniform_host(inputs_.data(), inputs_.bytes() / dtype_size(t), t, kFillSeed);
    inputs_dtype_ = t;
  }
  if (static_cast<std::size_t>(output_bytes) > outputs_.bytes()) {
    outputs_ = HostBuffer();
    outputs_ = HostBuffer(static_cast<std::size_t>(output_bytes));
  }
}

}  // namespace opbench
