#include "memops/reference_memops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "common/dtype.hpp"
#include "memops/elementwise.hpp"  // the kernels' constants only

namespace opbench::reference_memops {
namespace {

constexpr double kPi = 3.14159265358979323846;

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// log(sum e^x) over a row, the max taken out first: softmax and cross-entropy alike.
double log_sum_exp(const float* x, std::int64_t n) {
  double m = x[0];
  for (std::int64_t j = 1; j < n; ++j)
    m = std::max(m, static_cast<double>(x[j]));
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j)
    sum += std::exp(x[j] - m);
  return m + std::log(sum);
}

// x rounded to `bits` significant bits, to nearest, ties to even (the default rounding mode of
// nearbyint): x = f 2^e with f in [0.5, 1), and f 2^bits rounded to an integer.
double round_significand(double x, int bits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double f = std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(f, bits)), e - bits);
}

}  // namespace

void elementwise(MemOp op, MemPass pass, const float* const* in, std::int64_t n, double* const* y) {
  const double a = elementwise::kScale, alpha = elementwise::kAlpha;
  const double gelu_k = std::sqrt(2.0 / kPi), gelu_c = 0.044715;
  const bool fwd = pass == MemPass::fwd;
  for (std::int64_t i = 0; i < n; ++i) {
    auto at = [&](int k) { return static_cast<double>(in[k][i]); };
    double& out = y[0][i];
    switch (op) {
      case MemOp::add:
        out = at(0) + at(1);
        break;
      case MemOp::mul:
        out = at(0) * at(1);
        break;
      case MemOp::scale:
      case MemOp::scale_inplace:
        out = a * at(0);
        break;
      case MemOp::sqrt:
        out = std::sqrt(std::fabs(at(0)));
        break;
      case MemOp::silu: {  // y = x s; dx = dy s (1 + x (1 - s)), s = sigmoid(x)
        const double x = at(0), s = sigmoid(x);
        out = fwd ? x * s : at(1) * s * (1.0 + x * (1.0 - s));
        break;
      }
      case MemOp::swiglu: {  // y = g s u; dg = dy u s (1 + g (1 - s)), du = dy g s
        const double g = at(0), u = at(1), s = sigmoid(g);
        if (fwd) {
          out = g * s * u;
        } else {
          out = at(2) * u * s * (1.0 + g * (1.0 - s));
          y[1][i] = at(2) * g * s;
        }
        break;
      }
      case MemOp::gelu: {  // 0.5 x (1 + tanh(k (x + c x^3))) with tanh; dx = dy gelu'(x)
        const double x = at(0), t = std::tanh(gelu_k * (x + gelu_c * x * x * x));
        out = fwd ? 0.5 * x * (1.0 + t)
                  : at(1) * (0.5 * (1.0 + t) +
                             0.5 * x * (1.0 - t * t) * gelu_k * (1.0 + 3 * gelu_c * x * x));
        break;
      }
      case MemOp::fill:
        out = 0.0;
        break;
      case MemOp::axpy_inplace:
        out = at(0) + alpha * at(1);
        break;
      case MemOp::addcdiv_inplace:
        out = at(0) - alpha * at(1) / (std::fabs(at(2)) + 1.0);
        break;
      default:
        throw std::logic_error("reference_memops::elementwise: not an elementwise operator");
    }
  }
}

void rmsnorm_fwd(const float* x, const float* w, std::int64_t rows, std::int64_t cols, double eps,
                 double* y, double* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double squares = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      squares += static_cast<double>(xr[j]) * xr[j];
    const double rs = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
    rstd[r] = rs;
    for (std::int64_t j = 0; j < cols; ++j)
      y[r * cols + j] = xr[j] * rs * w[j];
  }
}

void rmsnorm_bwd(const float* dy, const float* x, const float* w, const float* rstd,
                 std::int64_t rows, std::int64_t cols, double* dx, double* dw) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * cols;
    const float* xr = x + r * cols;
    const double rs = rstd[r];
    double dot = 0;  // sum of w dy x
    for (std::int64_t j = 0; j < cols; ++j)
      dot += static_cast<double>(w[j]) * dyr[j] * xr[j];
    for (std::int64_t j = 0; j < cols; ++j) {
      dx[r * cols + j] =
          rs * w[j] * dyr[j] - static_cast<double>(xr[j]) * rs * rs * rs * dot / cols;
      dw[j] += static_cast<double>(dyr[j]) * xr[j] * rs;
    }
  }
}

void add_rmsnorm_fwd(const float* x, const float* residual, const float* w, std::int64_t rows,
                     std::int64_t cols, double eps, double* y, double* h, double* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double sum = static_cast<double>(x[r * cols + j]) + residual[r * cols + j];
      h[r * cols + j] = sum;
      squares += sum * sum;
    }
    const double rs = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
    rstd[r] = rs;
    for (std::int64_t j = 0; j < cols; ++j)
      y[r * cols + j] = h[r * cols + j] * rs * w[j];
  }
}

void layernorm_fwd(const float* x, const float* w, const float* b, std::int64_t rows,
                   std::int64_t cols, double eps, double* y, double* mean, double* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      sum += xr[j];
    const double mu = sum / static_cast<double>(cols);
    double var = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      var += (xr[j] - mu) * (xr[j] - mu);
    var /= static_cast<double>(cols);
    const double rs = 1.0 / std::sqrt(var + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (std::int64_t j = 0; j < cols; ++j)
      y[r * cols + j] = (xr[j] - mu) * rs * w[j] + b[j];
  }
}

void layernorm_bwd(const float* dy, const float* x, const float* w, const float* mean,
                   const float* rstd, std::int64_t rows, std::int64_t cols, double* dx, double* dw,
                   double* db) {
  std::vector<double> xhat(static_cast<std::size_t>(cols)), g(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * cols;
    const float* xr = x + r * cols;
    const double mu = mean[r], rs = rstd[r];
    double mean_g = 0, mean_gx = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<std::size_t>(j);
      xhat[k] = (xr[j] - mu) * rs;
      g[k] = static_cast<double>(w[j]) * dyr[j];
      mean_g += g[k];
      mean_gx += g[k] * xhat[k];
    }
    mean_g /= static_cast<double>(cols);
    mean_gx /= static_cast<double>(cols);
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto k = static_cast<std::size_t>(j);
      dx[r * cols + j] = rs * (g[k] - mean_g - xhat[k] * mean_gx);
      dw[j] += dyr[j] * xhat[k];
      db[j] += dyr[j];
    }
  }
}

void softmax_fwd(const float* x, std::int64_t rows, std::int64_t cols, double* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const double lse = log_sum_exp(xr, cols);
    for (std::int64_t j = 0; j < cols; ++j)
      y[r * cols + j] = std::exp(xr[j] - lse);
  }
}

void softmax_bwd(const float* y, const float* dy, std::int64_t rows, std::int64_t cols,
                 double* dx) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    double dot = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      dot += static_cast<double>(yr[j]) * dyr[j];
    for (std::int64_t j = 0; j < cols; ++j)
      dx[r * cols + j] = yr[j] * (dyr[j] - dot);
  }
}

void rope_tables(std::int64_t first_position, std::int64_t rows, std::int64_t head_dim, double base,
                 double* cos, double* sin) {
  const std::int64_t half = head_dim / 2;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(first_position + r) *
                           std::pow(base, -2.0 * static_cast<double>(i) / head_dim);
      cos[r * half + i] = std::cos(angle);
      sin[r * half + i] = std::sin(angle);
    }
}

void rope(const float* x, const float* cos, const float* sin, std::int64_t rows,
          std::int64_t vectors, std::int64_t head_dim, bool backward, double* y) {
  const std::int64_t half = head_dim / 2;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t v = 0; v < vectors; ++v) {
      const std::int64_t at = (r * vectors + v) * head_dim;
      for (std::int64_t i = 0; i < half; ++i) {
        const double c = cos[r * half + i];
        const double s = backward ? -static_cast<double>(sin[r * half + i]) : sin[r * half + i];
        const double lo = x[at + i], hi = x[at + i + half];
        y[at + i] = lo * c - hi * s;
        y[at + i + half] = hi * c + lo * s;
      }
    }
}

void cross_entropy(const float* logits, const std::int64_t* targets, std::int64_t rows,
                   std::int64_t cols, std::int64_t batch_rows, double* dlogits, double* loss) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    const double lse = log_sum_exp(xr, cols);
    loss[r] = lse - xr[targets[r]];
    for (std::int64_t j = 0; j < cols; ++j) {
      const double p = std::exp(xr[j] - lse);
      dlogits[r * cols + j] = (p - (j == targets[r] ? 1.0 : 0.0)) / static_cast<double>(batch_rows);
    }
  }
}

void embedding_fwd(const float* table, const std::int64_t* ids, std::int64_t rows,
                   std::int64_t cols, double* y) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j)
      y[r * cols + j] = table[ids[r] * cols + j];
}

void embedding_bwd(const float* dy, const std::int64_t* ids, std::int64_t rows, std::int64_t cols,
                   std::int64_t vocab_begin, std::int64_t vocab_end, double* dtable) {
  for (std::int64_t r = 0; r < rows; ++r) {
    if (ids[r] < vocab_begin || ids[r] >= vocab_end) continue;
    for (std::int64_t j = 0; j < cols; ++j)
      dtable[(ids[r] - vocab_begin) * cols + j] += dy[r * cols + j];
  }
}

void adamw(const float* param, const float* grad, const std::uint16_t* grad_bf16, const float* m,
           const float* v, std::int64_t n, const AdamWHyper& h, double* param_out, double* m_out,
           double* v_out) {
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = grad_bf16 ? static_cast<double>(bf16_to_float(grad_bf16[i])) : grad[i];
    const double m1 = h.beta1 * m[i] + (1.0 - h.beta1) * g;
    const double v1 = h.beta2 * v[i] + (1.0 - h.beta2) * g * g;
    const double decayed = param[i] * (1.0 - h.lr * h.weight_decay);
    param_out[i] = decayed - h.lr / bc1 * m1 / (std::sqrt(v1 / bc2) + h.eps);
    m_out[i] = m1;
    v_out[i] = v1;
  }
}

double round_to_bf16(double x) {
  return round_significand(x, 8);
}

double round_to_e4m3(double x) {
  const double a = std::fabs(x);
  double rounded;
  if (a < std::ldexp(1.0, -6))
    rounded = std::ldexp(std::nearbyint(std::ldexp(a, 9)), -9);  // subnormal: multiples of 2^-9
  else
    rounded = std::min(round_significand(a, 4), 448.0);
  return std::copysign(rounded, x);
}

void cast_to_bf16(const float* x, std::int64_t n, double* y) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = round_to_bf16(x[i]);
}

void cast_to_fp32(const std::uint16_t* x, std::int64_t n, double* y) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = bf16_to_float(x[i]);
}

double fp8_quantize(const std::uint16_t* x, double scale, std::int64_t n, double* y) {
  double amax = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = bf16_to_float(x[i]);
    amax = std::max(amax, std::fabs(v));
    y[i] = round_to_e4m3(v * scale);
  }
  return amax;
}

}  // namespace opbench::reference_memops
