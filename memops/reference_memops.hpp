#pragma once
// The oracle --check compares the CPU and GPU memory-bound operators with: plain single-threaded
// loops in double, written from the formulas (memops/memop.hpp), sharing no code with the fast
// loops (memops/cpu_memops.cpp, memops/memop_math.hpp). Inputs are the fast implementation's
// own (fp32, bf16 bits, int64 ids); outputs are double.
//
// Every function works on any slice of rows (or elements), so a caller can check a large case
// block by block; the sums over rows (dw, db, the embedding's gradient) accumulate into what the
// caller passes, which starts at zero.
#include <cstdint>

#include "memops/memop.hpp"

namespace opbench::reference_memops {

// The elementwise operator `op` in `pass` (memops/elementwise.hpp's formulas, in double, with
// libm's exp and tanh) over n elements: in[k] its k-th input (an in-place kernel's updated
// operand, as it was before the call, first), y[k] its k-th output (one, or two for a gated
// backward).
void elementwise(MemOp op, MemPass pass, const float* const* in, std::int64_t n, double* const* y);

// y = x / sqrt(mean(x^2) + eps) * w; rstd = 1 / sqrt(mean(x^2) + eps).
void rmsnorm_fwd(const float* x, const float* w, std::int64_t rows, std::int64_t cols, double eps,
                 double* y, double* rstd);
// dx = rstd w dy - x rstd^3 mean(w dy x); dw += sum over the rows of dy x rstd.
void rmsnorm_bwd(const float* dy, const float* x, const float* w, const float* rstd,
                 std::int64_t rows, std::int64_t cols, double* dx, double* dw);

// h = x + residual in double, then y = h / sqrt(mean(h^2) + eps) * w and rstd.
void add_rmsnorm_fwd(const float* x, const float* residual, const float* w, std::int64_t rows,
                     std::int64_t cols, double eps, double* y, double* h, double* rstd);

// y = (x - mean) rstd w + b, biased variance.
void layernorm_fwd(const float* x, const float* w, const float* b, std::int64_t rows,
                   std::int64_t cols, double eps, double* y, double* mean, double* rstd);
// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = w dy, xhat = (x - mean) rstd;
// dw += sum of dy xhat; db += sum of dy.
void layernorm_bwd(const float* dy, const float* x, const float* w, const float* mean,
                   const float* rstd, std::int64_t rows, std::int64_t cols, double* dx, double* dw,
                   double* db);

void softmax_fwd(const float* x, std::int64_t rows, std::int64_t cols, double* y);
// dx = y (dy - sum(y dy)).
void softmax_bwd(const float* y, const float* dy, std::int64_t rows, std::int64_t cols, double* dx);

// cos and sin of position * base^(-2i / head_dim) for positions first .. first + rows - 1 and
// i < head_dim / 2, exactly (the fast tables round the angle to fp32, as Hugging Face does).
void rope_tables(std::int64_t first_position, std::int64_t rows, std::int64_t head_dim, double base,
                 double* cos, double* sin);
// Each of the `vectors` heads of a row: y[i] = x[i] cos - x[i + d/2] sin,
// y[i + d/2] = x[i + d/2] cos + x[i] sin, with the row's cos and sin tables (sin negated for the
// backward).
void rope(const float* x, const float* cos, const float* sin, std::int64_t rows,
          std::int64_t vectors, std::int64_t head_dim, bool backward, double* y);

// loss = log(sum e^x) - x[target]; dlogits = (softmax(x) - onehot(target)) / batch_rows, the
// gradient of the mean loss over batch_rows rows.
void cross_entropy(const float* logits, const std::int64_t* targets, std::int64_t rows,
                   std::int64_t cols, std::int64_t batch_rows, double* dlogits, double* loss);

void embedding_fwd(const float* table, const std::int64_t* ids, std::int64_t rows,
                   std::int64_t cols, double* y);
// The rows [vocab_begin, vocab_end) of the table's gradient (that many rows of cols): each token
// whose id falls there adds its dy row.
void embedding_bwd(const float* dy, const std::int64_t* ids, std::int64_t rows, std::int64_t cols,
                   std::int64_t vocab_begin, std::int64_t vocab_end, double* dtable);

struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay;
  std::int64_t step;
};
// torch.optim.AdamW: p (1 - lr wd) - lr / (1 - beta1^t) m / (sqrt(v / (1 - beta2^t)) + eps)
// with m and v updated first. `grad_bf16` non-null: the gradient is bf16 (adamw_bf16).
void adamw(const float* param, const float* grad, const std::uint16_t* grad_bf16, const float* m,
           const float* v, std::int64_t n, const AdamWHyper& h, double* param_out, double* m_out,
           double* v_out);

// x rounded to bf16 (8 significant bits), to nearest, ties to even.
double round_to_bf16(double x);
// x rounded to fp8 e4m3 (4 significant bits, subnormals of 2^-9 below 2^-6), to nearest, ties
// to even, saturating at +-448.
double round_to_e4m3(double x);

void cast_to_bf16(const float* x, std::int64_t n, double* y);
void cast_to_fp32(const std::uint16_t* x, std::int64_t n, double* y);
// y = e4m3(x scale); returns max |x| of these n elements.
double fp8_quantize(const std::uint16_t* x, double scale, std::int64_t n, double* y);

}  // namespace opbench::reference_memops
