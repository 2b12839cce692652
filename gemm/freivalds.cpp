#include "gemm/freivalds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/cpu_parallel.hpp"

namespace opbench {
namespace {

constexpr double kSafety = 8.0;

// The check spreads its loops over the host's cores (a bf16 8192x28672x4096 GEMM's check took
// 3.5 s on one core of a GPU node), in blocks of outputs: each output's sum still runs over the
// same terms in the same order, so the residual is the same on any number of cores.
constexpr std::int64_t kOutputsPerTask = 64;

template <class Body>
void for_output_blocks(std::int64_t outputs, Body&& body) {
  parallel_for((outputs + kOutputsPerTask - 1) / kOutputsPerTask, [&](std::int64_t t) {
    body(t * kOutputsPerTask, std::min(outputs, (t + 1) * kOutputsPerTask));
  });
}

// Neumaier's compensated sum: the check's own sums run over up to n or k terms, and a plain fp64
// sum of n terms errs by about sqrt(n)·u relative to the row's scale — at n = 65536 that is 256·u,
// past the tolerance of an fp64 GEMM exact to rounding. Compensated, the error is about u whatever
// the length, so the residual measures the GEMM and not the check.
struct CompensatedSum {
  double sum = 0, carry = 0;
  void add(double v) {
    const double t = sum + v;
    carry += std::fabs(sum) >= std::fabs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  double value() const { return sum + carry; }
};

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

// out[r] = Σ_j M(r·cols + j)·v[j] over the rows of a rows x cols matrix stored row by row.
template <class Matrix>
void row_products(Matrix M, std::int64_t rows, std::int64_t cols, const std::vector<double>& v,
                  std::vector<double>& out) {
  for_output_blocks(rows, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      CompensatedSum s;
      for (std::int64_t j = 0; j < cols; ++j)
        s.add(M(r * cols + j) * v[j]);
      out[r] = s.value();
    }
  });
}

// out[c] = Σ_r M(r·cols + c)·v[r]: the product with the transpose of the same stored matrix,
// still read in storage order (a task sums its block of columns down the rows).
template <class Matrix>
void column_products(Matrix M, std::int64_t rows, std::int64_t cols, const std::vector<double>& v,
                     std::vector<double>& out) {
  for_output_blocks(cols, [&](std::int64_t c0, std::int64_t c1) {
    std::vector<CompensatedSum> acc(static_cast<std::size_t>(c1 - c0));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = c0; c < c1; ++c)
        acc[c - c0].add(M(r * cols + c) * v[r]);
    for (std::int64_t c = c0; c < c1; ++c)
      out[c] = acc[c - c0].value();
  });
}

}  // namespace

CheckResult freivalds_check(const GemmProblem& p, const void* a, const void* b, const void* c,
                            const CheckPrecision& precision, int vectors, std::uint64_t seed) {
  // The check's own rounding: the products A·y round once each (C·x and B·x are exact, x being
  // ±1) and the compensated sums add about one unit more.
  const double check_roundoff = 2 * unit_roundoff(DType::fp64);
  const double u = unit_roundoff(p.out_dtype) + 2 * precision.input_roundoff +
                   std::sqrt(static_cast<double>(p.k)) * precision.accumulate_roundoff +
                   check_roundoff;
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
    std::vector<double> row_sq(static_cast<std::size_t>(p.m));
    with_loader(p.out_dtype, c_at, [&](auto C) {
      for_output_blocks(p.m, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
          double s = 0;
          for (std::int64_t j = 0; j < p.n; ++j)
            s += C(i * p.n + j) * C(i * p.n + j);
          row_sq[i] = s;
          row_norm[i] = std::sqrt(s);
        }
      });
    });
    double frob2 = 0;
    for (const double s : row_sq)
      frob2 += s;
    if (!std::isfinite(frob2)) finite = false;
    const double mean_row = std::sqrt(frob2 / static_cast<double>(p.m));

    for (int v = 0; v < vectors && finite; ++v) {
      for (auto& xi : x)
        xi = (rng() & 1) ? 1.0 : -1.0;
      // y = op(B)·x and z = op(A)·y, each matrix walked in storage order; w = C·x.
      with_loader(p.dtype, b_at, [&](auto B) {
        if (p.transb)
          column_products(B, p.n, p.k, x, y);  // B stored n x k
        else
          row_products(B, p.k, p.n, x, y);  // B stored k x n
      });
      with_loader(p.dtype, a_at, [&](auto A) {
        if (p.transa)
          column_products(A, p.k, p.m, y, z);  // A stored k x m
        else
          row_products(A, p.m, p.k, y, z);  // A stored m x k
      });
      with_loader(p.out_dtype, c_at, [&](auto C) { row_products(C, p.m, p.n, x, w); });
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

void spoil_element_for_test(void* c, DType t, std::size_t index) {
  const double v = element_as_double(c, t, index);
  store_from_double(c, t, index, v + 1000.0);
}

CheckPrecision gemm_check_precision(DType t) {
  CheckPrecision p;
  p.input_roundoff = t == DType::tf32 ? unit_roundoff(DType::tf32) : 0.0;
  p.accumulate_roundoff = t == DType::fp64       ? unit_roundoff(DType::fp64)
                          : t == DType::fp8_e4m3 ? std::ldexp(1.0, -14)
                                                 : unit_roundoff(DType::fp32);
  return p;
}

}  // namespace opbench
