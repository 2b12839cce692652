#include "gemm/freivalds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace opbench {
namespace {

constexpr double kSafety = 8.0;

// Calls f with a loader for the element type, so the inner loops are compiled per type.
template <typename F>
void with_loader(DType t, const void* data, F&& f) {
  auto bytes = static_cast<const unsigned char*>(data);
  switch (t) {
    case DType::fp64:
      return f([p = reinterpret_cast<const double*>(data)](std::int64_t i) { return p[i]; });
    case DType::fp32:
    case DType::tf32:
      return f([p = reinterpret_cast<const float*>(data)](std::int64_t i) { return double(p[i]); });
    case DType::bf16:
      return f([bytes](std::int64_t i) {
        std::uint16_t v;
        std::memcpy(&v, bytes + 2 * i, 2);
        return double(bf16_to_float(v));
      });
    case DType::fp16:
      return f([bytes](std::int64_t i) {
        std::uint16_t v;
        std::memcpy(&v, bytes + 2 * i, 2);
        return double(fp16_to_float(v));
      });
    default:
      return f([bytes, t](std::int64_t i) {
        return element_as_double(bytes, t, static_cast<std::size_t>(i));
      });
  }
}

}  // namespace

CheckResult freivalds_check(const GemmProblem& p, const void* a, const void* b, const void* c,
                            const CheckPrecision& precision, int vectors, std::uint64_t seed) {
  const double u = unit_roundoff(p.out_dtype) + 2 * precision.input_roundoff +
                   std::sqrt(static_cast<double>(p.k)) * precision.accumulate_roundoff;
  CheckResult result;
  result.tolerance = kSafety * u;
  std::mt19937_64 rng(seed);
  std::vector<double> x(p.n), y(p.k), z(p.m), w(p.m), row_norm(p.m);
  const std::int64_t in_size = static_cast<std::int64_t>(dtype_size(p.dtype));
  const std::int64_t out_size = static_cast<std::int64_t>(dtype_size(p.out_dtype));
  bool finite = true;

  for (std::int64_t batch = 0; batch < p.batch; ++batch) {
    auto a_at = static_cast<const unsigned char*>(a) + batch * p.a_elements() * in_size;
    auto b_at = static_cast<const unsigned char*>(b) + batch * p.b_elements() * in_size;
    auto c_at = static_cast<const unsigned char*>(c) + batch * p.c_elements() * out_size;

    // Row norms of C (and its Frobenius norm) set the scale of rounding errors.
    double frob2 = 0;
    with_loader(p.out_dtype, c_at, [&](auto C) {
      for (std::int64_t i = 0; i < p.m; ++i) {
        double s = 0;
        for (std::int64_t j = 0; j < p.n; ++j)
          s += C(i * p.n + j) * C(i * p.n + j);
        row_norm[i] = std::sqrt(s);
        frob2 += s;
      }
    });
    if (!std::isfinite(frob2)) finite = false;
    const double mean_row = std::sqrt(frob2 / static_cast<double>(p.m));

    for (int v = 0; v < vectors && finite; ++v) {
      for (auto& xi : x)
        xi = (rng() & 1) ? 1.0 : -1.0;
      // y = op(B)·x and z = op(A)·y, each loop walking its matrix in storage order.
      with_loader(p.dtype, b_at, [&](auto B) {
        std::fill(y.begin(), y.end(), 0.0);
        if (p.transb) {  // B stored n x k
          for (std::int64_t j = 0; j < p.n; ++j)
            for (std::int64_t q = 0; q < p.k; ++q)
              y[q] += B(j * p.k + q) * x[j];
        } else {  // B stored k x n
          for (std::int64_t q = 0; q < p.k; ++q) {
            double s = 0;
            for (std::int64_t j = 0; j < p.n; ++j)
              s += B(q * p.n + j) * x[j];
            y[q] = s;
          }
        }
      });
      with_loader(p.dtype, a_at, [&](auto A) {
        std::fill(z.begin(), z.end(), 0.0);
        if (p.transa) {  // A stored k x m
          for (std::int64_t q = 0; q < p.k; ++q)
            for (std::int64_t i = 0; i < p.m; ++i)
              z[i] += A(q * p.m + i) * y[q];
        } else {  // A stored m x k
          for (std::int64_t i = 0; i < p.m; ++i) {
            double s = 0;
            for (std::int64_t q = 0; q < p.k; ++q)
              s += A(i * p.k + q) * y[q];
            z[i] = s;
          }
        }
      });
      with_loader(p.out_dtype, c_at, [&](auto C) {  // w = C·x
        for (std::int64_t i = 0; i < p.m; ++i) {
          double s = 0;
          for (std::int64_t j = 0; j < p.n; ++j)
            s += C(i * p.n + j) * x[j];
          w[i] = s;
        }
      });
      for (std::int64_t i = 0; i < p.m; ++i) {
        double scale = std::max(row_norm[i], mean_row);
        double diff = std::fabs(w[i] - z[i]);
        double residual = scale > 0 ? diff / scale : (diff > 0 ? INFINITY : 0.0);
        result.max_residual = std::max(result.max_residual, residual);
      }
    }
  }
  if (!finite) {
    result.max_residual = INFINITY;
    result.detail = "result holds NaN or Inf";
    return result;
  }
  result.passed = result.max_residual <= result.tolerance;
  result.detail = fmt::format("Freivalds residual {:.2e} {} tolerance {:.2e}", result.max_residual,
                              result.passed ? "<=" : ">", result.tolerance);
  return result;
}

}  // namespace opbench
