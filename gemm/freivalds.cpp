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
      // y = op(B)·x and z = op(A)·y, each loop walking its matrix in storage order.
      with_loader(p.dtype, b_at, [&](auto B) {
        if (p.transb) {  // B stored n x k: a task sums its block of columns down the rows
          for_output_blocks(p.k, [&](std::int64_t q0, std::int64_t q1) {
            std::vector<CompensatedSum> acc(static_cast<std::size_t>(q1 - q0));
            for (std::int64_t j = 0; j < p.n; ++j)
              for (std::int64_t q = q0; q < q1; ++q)
                acc[q - q0].add(B(j * p.k + q) * x[j]);
            for (std::int64_t q = q0; q < q1; ++q)
              y[q] = acc[q - q0].value();
          });
        } else {  // B stored k x n
          for_output_blocks(p.k, [&](std::int64_t q0, std::int64_t q1) {
            for (std::int64_t q = q0; q < q1; ++q) {
              CompensatedSum s;
              for (std::int64_t j = 0; j < p.n; ++j)
                s.add(B(q * p.n + j) * x[j]);
              y[q] = s.value();
            }
          });
        }
      });
      with_loader(p.dtype, a_at, [&](auto A) {
        if (p.transa) {  // A stored k x m
          for_output_blocks(p.m, [&](std::int64_t i0, std::int64_t i1) {
            std::vector<CompensatedSum> acc(static_cast<std::size_t>(i1 - i0));
            for (std::int64_t q = 0; q < p.k; ++q)
              for (std::int64_t i = i0; i < i1; ++i)
                acc[i - i0].add(A(q * p.m + i) * y[q]);
            for (std::int64_t i = i0; i < i1; ++i)
              z[i] = acc[i - i0].value();
          });
        } else {  // A stored m x k
          for_output_blocks(p.m, [&](std::int64_t i0, std::int64_t i1) {
            for (std::int64_t i = i0; i < i1; ++i) {
              CompensatedSum s;
              for (std::int64_t q = 0; q < p.k; ++q)
                s.add(A(i * p.k + q) * y[q]);
              z[i] = s.value();
            }
          });
        }
      });
      with_loader(p.out_dtype, c_at, [&](auto C) {  // w = C·x
        for_output_blocks(p.m, [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t i = i0; i < i1; ++i) {
            CompensatedSum s;
            for (std::int64_t j = 0; j < p.n; ++j)
              s.add(C(i * p.n + j) * x[j]);
            w[i] = s.value();
          }
        });
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

void spoil_element_for_test(void* c, DType t, std::size_t index) {
  const double v = element_as_double(c, t, index);
  store_from_double(c, t, index, v + 1000.0);
}

}  // namespace opbench
