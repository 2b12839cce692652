#include "memops/cpu_memops.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "common/cpu_parallel.hpp"
#include "common/dtype.hpp"
#include "common/int_math.hpp"
#include "memops/elementwise.hpp"
#include "memops/memop_inputs.hpp"

// The loops live in kernels over a range of elements or rows (the functions marked
// OPBENCH_CPU_CLONES below), which the public functions hand to parallel_for in chunks.
//
// GCC compiles each kernel twice, for baseline x86-64 (SSE2: opbench builds without -march)
// and for x86-64-v3 (AVX2 and FMA, Haswell and later), and the loader picks the one the CPU
// runs, as OpenBLAS picks its kernels at run time. The SSE2 loops are vectorised too, but the
// exp-based operators and the narrowing conversions are compute-bound there (4 lanes, no
// 32-to-16-bit unsigned pack): measured on a Xeon with AVX-512, exp_approx takes 1.57 ns an
// element on SSE2 and 0.41 ns on AVX2, a bf16 cast 0.30 and 0.15 ns. The AVX2 version may fuse
// a multiply and an add into an FMA (one rounding instead of two), which the check's tolerances
// cover. The kernels must stay out of lambdas: a lambda's body is a function of its own, which
// would be compiled for the baseline only.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define OPBENCH_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define OPBENCH_CPU_CLONES
#endif

namespace opbench::cpu_memops {
namespace {

using namespace memop_math;

// Elements per task: 256 KiB of fp32, enough to amortise a task's scheduling and few enough
// that dynamic balancing evens out the cores.
constexpr std::int64_t kChunk = 65536;
// Independent accumulators of a row reduction. Without -ffast-math GCC keeps a single running
// sum in source order and cannot vectorise it; 16 lanes summed side by side are four 4-wide (two
// 8-wide) vectors it can, and they also shorten the dependency chain (and the rounding error
// grows with n/16 instead of n).
constexpr int kLanes = 16;

std::int64_t cores() {
  return parallel_threads(INT64_MAX);
}

// body(begin, end) over [0, n) in chunks of kChunk elements, on every core.
template <class Body>
void for_chunks(std::int64_t n, Body&& body) {
  parallel_for(ceil_div(n, kChunk),
               [&](std::int64_t t) { body(t * kChunk, std::min(n, (t + 1) * kChunk)); });
}

// body(first_row, end_row) over whole rows, about kChunk elements a task.
template <class Body>
void for_row_chunks(std::int64_t rows, std::int64_t cols, Body&& body) {
  const std::int64_t per_task = std::max<std::int64_t>(1, kChunk / cols);
  parallel_for(ceil_div(rows, per_task),
               [&](std::int64_t t) { body(t * per_task, std::min(rows, (t + 1) * per_task)); });
}

inline float combine_lanes(float* acc) {
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l)
      acc[l] += acc[l + width];
  return acc[0];
}

// The sum of term(i) for i in [0, n), in kLanes interleaved partial sums.
template <class Term>
inline float lane_sum(std::int64_t n, Term term) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += term(i + l);
  for (int l = 0; i + l < n; ++l)
    acc[l] += term(i + l);
  return combine_lanes(acc);
}

// Floats ordered as signed integers: flipping the magnitude bits of negative values reverses
// their order, so a max over these keys is the float max, and GCC vectorises an integer max
// (a float max it does not without -ffinite-math-only, for NaN's and -0's sake). The map is its
// own inverse. NaN with the sign bit clear is above infinity, so it propagates like torch.max.
inline std::int32_t order_key(float f) {
  const auto i = std::bit_cast<std::int32_t>(f);
  return i ^ ((i >> 31) & 0x7FFFFFFF);
}

inline float from_order_key(std::int32_t k) {
  return std::bit_cast<float>(k ^ ((k >> 31) & 0x7FFFFFFF));
}

inline float row_max(const float* __restrict x, std::int64_t n) {
  std::int32_t acc[kLanes];
  for (int l = 0; l < kLanes; ++l)
    acc[l] = INT32_MIN;
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const std::int32_t k = order_key(x[i + l]);
      acc[l] = k > acc[l] ? k : acc[l];
    }
  for (int l = 0; i + l < n; ++l) {
    const std::int32_t k = order_key(x[i + l]);
    acc[l] = k > acc[l] ? k : acc[l];
  }
  std::int32_t m = acc[0];
  for (int l = 1; l < kLanes; ++l)
    m = acc[l] > m ? acc[l] : m;
  return from_order_key(m);
}

// ---- kernels -------------------------------------------------------------------------------

// One elementwise kernel over [b, e): F's arithmetic on each element, an in-place kernel's
// updated operand read from y0 (and written back there), the other inputs from x0..x2.
template <class F>
OPBENCH_CPU_CLONES void elementwise_range(const float* __restrict x0, const float* __restrict x1,
                                          const float* __restrict x2, float* __restrict y0,
                                          float* __restrict y1, std::int64_t b, std::int64_t e) {
  constexpr int first = F::kInPlace ? 1 : 0;  // where the inputs read from x start
  constexpr int reads = F::kIn - first;
  const F kernel{};
  for (std::int64_t i = b; i < e; ++i) {
    float in[F::kIn + 1], out[F::kOut];  // + 1: a fill reads nothing
    if constexpr (F::kInPlace) in[0] = y0[i];
    if constexpr (reads > 0) in[first] = x0[i];
    if constexpr (reads > 1) in[first + 1] = x1[i];
    if constexpr (reads > 2) in[first + 2] = x2[i];
    kernel(in, out);
    y0[i] = out[0];
    if constexpr (F::kOut > 1) y1[i] = out[1];
  }
}

OPBENCH_CPU_CLONES void rmsnorm_fwd_rows(const float* __restrict x, const float* __restrict w,
                                         float* __restrict y, float* __restrict rstd,
                                         std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + r * cols;
    float* __restrict yr = y + r * cols;
    const float rs =
        rms_rstd(lane_sum(cols, [xr](std::int64_t i) { return xr[i] * xr[i]; }), cols, kRmsNormEps);
    rstd[r] = rs;
    for (std::int64_t j = 0; j < cols; ++j)
      yr[j] = xr[j] * rs * w[j];  // HF's order: (x rstd) w
  }
}

OPBENCH_CPU_CLONES void add_rmsnorm_fwd_rows(const float* __restrict x,
                                             const float* __restrict residual,
                                             const float* __restrict w, float* __restrict y,
                                             float* __restrict h, float* __restrict rstd,
                                             std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + r * cols;
    const float* __restrict rr = residual + r * cols;
    float* __restrict hr = h + r * cols;
    float* __restrict yr = y + r * cols;
    // h goes to memory once, and is read back from cache for the sum and the output.
    for (std::int64_t j = 0; j < cols; ++j)
      hr[j] = residual_add(xr[j], rr[j]);
    const float rs =
        rms_rstd(lane_sum(cols, [hr](std::int64_t i) { return hr[i] * hr[i]; }), cols, kRmsNormEps);
    rstd[r] = rs;
    for (std::int64_t j = 0; j < cols; ++j)
      yr[j] = rms_scale(hr[j], rs, w[j]);
  }
}

// The norms' backward sums dw (and db) over rows: each task sums its rows into its own partial
// row of the workspace (no two tasks write the same memory, and the result does not depend on
// which thread ran what), then the partials are added column by column. Few tasks, so the
// partials stay a small fraction of the traffic.
std::int64_t norm_bwd_tasks(std::int64_t rows, std::int64_t cols) {
  const std::int64_t by_size = ceil_div(rows, std::max<std::int64_t>(1, kChunk / cols));
  return std::max<std::int64_t>(1, std::min({rows, by_size, 4 * cores()}));
}

OPBENCH_CPU_CLONES void rmsnorm_bwd_rows(const float* __restrict dy, const float* __restrict x,
                                         const float* __restrict w, const float* __restrict rstd,
                                         float* __restrict dx, float* __restrict part_w,
                                         std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for (std::int64_t j = 0; j < cols; ++j)
    part_w[j] = 0.0f;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict dyr = dy + r * cols;
    const float* __restrict xr = x + r * cols;
    float* __restrict dxr = dx + r * cols;
    const float rs = rstd[r];
    const float dot = lane_sum(cols, [=](std::int64_t i) { return dyr[i] * w[i] * xr[i]; });
    const float c = rms_bwd_c(rs, dot, inv_cols);
    for (std::int64_t j = 0; j < cols; ++j) {
      dxr[j] = rms_bwd_dx(dyr[j], xr[j], w[j], rs, c);
      part_w[j] += rms_bwd_dw(dyr[j], xr[j], rs);
    }
  }
}

OPBENCH_CPU_CLONES void layernorm_fwd_rows(const float* __restrict x, const float* __restrict w,
                                           const float* __restrict b, float* __restrict y,
                                           float* __restrict mean, float* __restrict rstd,
                                           std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + r * cols;
    float* __restrict yr = y + r * cols;
    const float mu = row_mean(lane_sum(cols, [xr](std::int64_t i) { return xr[i]; }), cols);
    const float centred = lane_sum(cols, [=](std::int64_t i) {
      const float d = xr[i] - mu;
      return d * d;
    });
    const float rs = layernorm_rstd(centred, cols, kLayerNormEps);
    mean[r] = mu;
    rstd[r] = rs;
    for (std::int64_t j = 0; j < cols; ++j)
      yr[j] = (xr[j] - mu) * rs * w[j] + b[j];
  }
}

OPBENCH_CPU_CLONES void layernorm_bwd_rows(const float* __restrict dy, const float* __restrict x,
                                           const float* __restrict w, const float* __restrict mean,
                                           const float* __restrict rstd, float* __restrict dx,
                                           float* __restrict part_w, float* __restrict part_b,
                                           std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for (std::int64_t j = 0; j < cols; ++j) {
    part_w[j] = 0.0f;
    part_b[j] = 0.0f;
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict dyr = dy + r * cols;
    const float* __restrict xr = x + r * cols;
    float* __restrict dxr = dx + r * cols;
    const float mu = mean[r], rs = rstd[r];
    const float sum_g = lane_sum(cols, [=](std::int64_t i) { return dyr[i] * w[i]; });
    const float sum_gx = lane_sum(
        cols, [=](std::int64_t i) { return dyr[i] * w[i] * layernorm_xhat(xr[i], mu, rs); });
    const float mean_g = sum_g * inv_cols, mean_gx = sum_gx * inv_cols;
    for (std::int64_t j = 0; j < cols; ++j) {
      const float xhat = layernorm_xhat(xr[j], mu, rs);
      dxr[j] = layernorm_bwd_dx(dyr[j], w[j], xhat, rs, mean_g, mean_gx);
      part_w[j] += dyr[j] * xhat;
      part_b[j] += dyr[j];
    }
  }
}

// out[j] = sum over t < tasks of partials[t cols + j], for j in [b, e).
OPBENCH_CPU_CLONES void add_partials_range(const float* __restrict partials, std::int64_t tasks,
                                           std::int64_t cols, float* __restrict out, std::int64_t b,
                                           std::int64_t e) {
  for (std::int64_t j = b; j < e; ++j)
    out[j] = 0.0f;
  for (std::int64_t t = 0; t < tasks; ++t)
    for (std::int64_t j = b; j < e; ++j)
      out[j] += partials[t * cols + j];
}

void add_partials(const float* partials, std::int64_t tasks, std::int64_t cols, float* out) {
  for_chunks(cols, [=](std::int64_t b, std::int64_t e) {
    add_partials_range(partials, tasks, cols, out, b, e);
  });
}

OPBENCH_CPU_CLONES void softmax_fwd_rows(const float* __restrict x, float* __restrict y,
                                         std::int64_t r0, std::int64_t r1, std::int64_t cols) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + r * cols;
    float* __restrict yr = y + r * cols;
    const float m = row_max(xr, cols);
    // The row is in cache after the max: writing e^(x - m) and summing it in a second loop
    // costs no memory traffic and keeps each loop simple enough to vectorise.
    for (std::int64_t j = 0; j < cols; ++j)
      yr[j] = exp_or_zero(xr[j] - m);
    const float inv = 1.0f / lane_sum(cols, [yr](std::int64_t i) { return yr[i]; });
    for (std::int64_t j = 0; j < cols; ++j)
      yr[j] *= inv;
  }
}

OPBENCH_CPU_CLONES void softmax_bwd_rows(const float* __restrict y, const float* __restrict dy,
                                         float* __restrict dx, std::int64_t r0, std::int64_t r1,
                                         std::int64_t cols) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict yr = y + r * cols;
    const float* __restrict dyr = dy + r * cols;
    float* __restrict dxr = dx + r * cols;
    const float dot = lane_sum(cols, [=](std::int64_t i) { return yr[i] * dyr[i]; });
    for (std::int64_t j = 0; j < cols; ++j)
      dxr[j] = yr[j] * (dyr[j] - dot);
  }
}

OPBENCH_CPU_CLONES void rope_rows(const float* __restrict x, const float* __restrict cos,
                                  const float* __restrict sin, float* __restrict y, std::int64_t r0,
                                  std::int64_t r1, std::int64_t vectors, std::int64_t head_dim,
                                  bool backward) {
  const std::int64_t half = head_dim / 2;
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict c = cos + r * half;
    const float* __restrict s = sin + r * half;
    for (std::int64_t v = 0; v < vectors; ++v) {
      const float* __restrict xv = x + (r * vectors + v) * head_dim;
      float* __restrict yv = y + (r * vectors + v) * head_dim;
      // One loop per direction, so neither holds a branch.
      if (backward) {
        for (std::int64_t i = 0; i < half; ++i) {
          const RopePair p = rope_rotate_back(xv[i], xv[i + half], c[i], s[i]);
          yv[i] = p.lo;
          yv[i + half] = p.hi;
        }
      } else {
        for (std::int64_t i = 0; i < half; ++i) {
          const RopePair p = rope_rotate(xv[i], xv[i + half], c[i], s[i]);
          yv[i] = p.lo;
          yv[i + half] = p.hi;
        }
      }
    }
  }
}

OPBENCH_CPU_CLONES void cross_entropy_rows(const float* __restrict logits,
                                           const std::int64_t* __restrict targets,
                                           float* __restrict dlogits, float* __restrict loss,
                                           std::int64_t r0, std::int64_t r1, std::int64_t cols,
                                           float inv_rows) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = logits + r * cols;
    float* __restrict gr = dlogits + r * cols;
    const std::int64_t target = targets[r];
    const float m = row_max(xr, cols);
    // e^(x - m) goes straight into the gradient's row (in cache), is summed, then scaled: the
    // logits are read from memory once after the max, and the gradient written once.
    for (std::int64_t j = 0; j < cols; ++j)
      gr[j] = exp_or_zero(xr[j] - m);
    const float sum = lane_sum(cols, [gr](std::int64_t i) { return gr[i]; });
    loss[r] = m + ::logf(sum) - xr[target];
    const float scale = inv_rows / sum;  // softmax, times d(mean loss)/d(loss) = 1/rows
    for (std::int64_t j = 0; j < cols; ++j)
      gr[j] *= scale;
    gr[target] -= inv_rows;
  }
}

// Rows [v0, v1) of the table's gradient: zeroed, then every token whose id falls there adds its
// dy row, in token order.
OPBENCH_CPU_CLONES void embedding_bwd_range(const float* __restrict dy,
                                            const std::int64_t* __restrict ids,
                                            float* __restrict dtable, std::int64_t rows,
                                            std::int64_t cols, std::int64_t v0, std::int64_t v1) {
  std::memset(dtable + v0 * cols, 0, static_cast<std::size_t>((v1 - v0) * cols) * sizeof(float));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t id = ids[r];
    if (id < v0 || id >= v1) continue;
    float* __restrict d = dtable + id * cols;
    const float* __restrict s = dy + r * cols;
    for (std::int64_t j = 0; j < cols; ++j)
      d[j] += s[j];
  }
}

OPBENCH_CPU_CLONES void adamw_range(float* __restrict param, const float* __restrict grad,
                                    float* __restrict m, float* __restrict v, const AdamWStep& step,
                                    std::int64_t b, std::int64_t e) {
  const AdamWStep s = step;
  for (std::int64_t i = b; i < e; ++i) {
    const AdamWState next = adamw_update({param[i], m[i], v[i]}, grad[i], s);
    param[i] = next.param;
    m[i] = next.m;
    v[i] = next.v;
  }
}

OPBENCH_CPU_CLONES void adamw_bf16_range(float* __restrict param,
                                         const std::uint16_t* __restrict grad, float* __restrict m,
                                         float* __restrict v, std::uint16_t* __restrict param_bf16,
                                         const AdamWStep& step, std::int64_t b, std::int64_t e) {
  const AdamWStep s = step;
  for (std::int64_t i = b; i < e; ++i) {
    const AdamWState next = adamw_update({param[i], m[i], v[i]}, bf16_decode(grad[i]), s);
    param[i] = next.param;
    m[i] = next.m;
    v[i] = next.v;
    param_bf16[i] = bf16_encode(next.param);
  }
}

OPBENCH_CPU_CLONES void cast_to_bf16_range(const float* __restrict x, std::uint16_t* __restrict y,
                                           std::int64_t b, std::int64_t e) {
  for (std::int64_t i = b; i < e; ++i)
    y[i] = bf16_encode(x[i]);
}

OPBENCH_CPU_CLONES void cast_to_fp32_range(const std::uint16_t* __restrict x, float* __restrict y,
                                           std::int64_t b, std::int64_t e) {
  for (std::int64_t i = b; i < e; ++i)
    y[i] = bf16_decode(x[i]);
}

// Quantises [b, e) through `table` (the e4m3 code of every bf16 input at this scale) and
// returns the amax of [b, e) as bf16 bits without the sign: |x| of a bf16 is its bits without the
// sign, and non-negative bf16 order as their bits do, so an integer max finds it (and a NaN,
// above infinity, wins).
OPBENCH_CPU_CLONES std::int32_t fp8_quantize_range(const std::uint16_t* __restrict x,
                                                   const std::uint8_t* __restrict table,
                                                   std::uint8_t* __restrict y, std::int64_t b,
                                                   std::int64_t e) {
  std::int32_t acc[kLanes] = {};
  // Blocks of 1024 elements (2 KiB, in L1): quantise, then take the block's amax from L1.
  // Memory sees x once; each loop stays simple enough for GCC to vectorise.
  constexpr std::int64_t kBlock = 1024;
  for (std::int64_t b0 = b; b0 < e; b0 += kBlock) {
    const std::int64_t e0 = std::min(e, b0 + kBlock);
    for (std::int64_t i = b0; i < e0; ++i)
      y[i] = table[x[i]];
    std::int64_t i = b0;
    for (; i + kLanes <= e0; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const std::int32_t a = x[i + l] & 0x7FFF;
        acc[l] = a > acc[l] ? a : acc[l];
      }
    for (int l = 0; i + l < e0; ++l) {
      const std::int32_t a = x[i + l] & 0x7FFF;
      acc[l] = a > acc[l] ? a : acc[l];
    }
  }
  std::int32_t best = 0;
  for (int l = 0; l < kLanes; ++l)
    best = acc[l] > best ? acc[l] : best;
  return best;
}

// The e4m3 code of x scale for each of the 65536 bf16 x, by fp8_e4m3_encode: a bf16 input has
// only that many values, and a lookup in a 64 KiB table (in L2) costs 0.24 ns an element where
// the arithmetic costs 0.8 (AVX2) to 1.5 ns (SSE2), which made the operator compute-bound. The
// codes are the arithmetic's, bit for bit. The last scale's table is kept: delayed scaling changes
// the scale once a step, and building a table costs about 50 us.
std::shared_ptr<const std::vector<std::uint8_t>> fp8_table(float scale) {
  static std::mutex mutex;
  static std::shared_ptr<const std::vector<std::uint8_t>> table;
  static std::uint32_t table_scale = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!table || table_scale != float_bits(scale)) {
    auto codes = std::make_shared<std::vector<std::uint8_t>>(65536);
    for (std::uint32_t b = 0; b < 65536; ++b)
      (*codes)[b] = fp8_e4m3_encode(bf16_decode(static_cast<std::uint16_t>(b)) * scale);
    table = std::move(codes);
    table_scale = float_bits(scale);
  }
  return table;
}

}  // namespace

// ---- the operators -------------------------------------------------------------------------

void run_elementwise(MemOp op, MemPass pass, const ElementwisePointers& p, std::int64_t n) {
  const bool known = elementwise::visit_elementwise(op, pass, [&](auto kernel) {
    using F = decltype(kernel);
    for_chunks(n, [&](std::int64_t b, std::int64_t e) {
      elementwise_range<F>(p.in[0], p.in[1], p.in[2], p.out[0], p.out[1], b, e);
    });
  });
  if (!known) throw std::logic_error("cpu_memops::run_elementwise: not an elementwise operator");
}

void rmsnorm_fwd(const float* x, const float* w, float* y, float* rstd, std::int64_t rows,
                 std::int64_t cols) {
  for_row_chunks(rows, cols, [=](std::int64_t r0, std::int64_t r1) {
    rmsnorm_fwd_rows(x, w, y, rstd, r0, r1, cols);
  });
}

void add_rmsnorm_fwd(const float* x, const float* residual, const float* w, float* y, float* h,
                     float* rstd, std::int64_t rows, std::int64_t cols) {
  for_row_chunks(rows, cols, [=](std::int64_t r0, std::int64_t r1) {
    add_rmsnorm_fwd_rows(x, residual, w, y, h, rstd, r0, r1, cols);
  });
}

std::int64_t norm_bwd_workspace_floats(std::int64_t rows, std::int64_t cols) {
  return 2 * norm_bwd_tasks(rows, cols) * cols;
}

void rmsnorm_bwd(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
                 float* dw, float* workspace, std::int64_t rows, std::int64_t cols) {
  const std::int64_t tasks = norm_bwd_tasks(rows, cols);
  const std::int64_t per_task = ceil_div(rows, tasks);
  parallel_for(tasks, [=](std::int64_t t) {
    rmsnorm_bwd_rows(dy, x, w, rstd, dx, workspace + t * cols, std::min(rows, t * per_task),
                     std::min(rows, (t + 1) * per_task), cols);
  });
  add_partials(workspace, tasks, cols, dw);
}

void layernorm_fwd(const float* x, const float* w, const float* b, float* y, float* mean,
                   float* rstd, std::int64_t rows, std::int64_t cols) {
  for_row_chunks(rows, cols, [=](std::int64_t r0, std::int64_t r1) {
    layernorm_fwd_rows(x, w, b, y, mean, rstd, r0, r1, cols);
  });
}

void layernorm_bwd(const float* dy, const float* x, const float* w, const float* mean,
                   const float* rstd, float* dx, float* dw, float* db, float* workspace,
                   std::int64_t rows, std::int64_t cols) {
  const std::int64_t tasks = norm_bwd_tasks(rows, cols);
  const std::int64_t per_task = ceil_div(rows, tasks);
  float* dw_parts = workspace;
  float* db_parts = workspace + tasks * cols;
  parallel_for(tasks, [=](std::int64_t t) {
    layernorm_bwd_rows(dy, x, w, mean, rstd, dx, dw_parts + t * cols, db_parts + t * cols,
                       std::min(rows, t * per_task), std::min(rows, (t + 1) * per_task), cols);
  });
  add_partials(dw_parts, tasks, cols, dw);
  add_partials(db_parts, tasks, cols, db);
}

void softmax_fwd(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for_row_chunks(rows, cols,
                 [=](std::int64_t r0, std::int64_t r1) { softmax_fwd_rows(x, y, r0, r1, cols); });
}

void softmax_bwd(const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t cols) {
  for_row_chunks(rows, cols, [=](std::int64_t r0, std::int64_t r1) {
    softmax_bwd_rows(y, dy, dx, r0, r1, cols);
  });
}

void rope_tables(float* cos, float* sin, std::int64_t rows, std::int64_t head_dim) {
  const std::int64_t half = head_dim / 2;
  for_row_chunks(rows, half, [=](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t i = 0; i < half; ++i) {
        const float angle = rope_angle(r, i, head_dim);
        cos[r * half + i] = ::cosf(angle);
        sin[r * half + i] = ::sinf(angle);
      }
  });
}

void rope(const float* x, const float* cos, const float* sin, float* y, std::int64_t rows,
          std::int64_t vectors, std::int64_t head_dim, bool backward) {
  for_row_chunks(rows, vectors * head_dim, [=](std::int64_t r0, std::int64_t r1) {
    rope_rows(x, cos, sin, y, r0, r1, vectors, head_dim, backward);
  });
}

void cross_entropy(const float* logits, const std::int64_t* targets, float* dlogits, float* loss,
                   std::int64_t rows, std::int64_t cols) {
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for_row_chunks(rows, cols, [=](std::int64_t r0, std::int64_t r1) {
    cross_entropy_rows(logits, targets, dlogits, loss, r0, r1, cols, inv_rows);
  });
}

void embedding_fwd(const float* table, const std::int64_t* ids, float* y, std::int64_t rows,
                   std::int64_t cols) {
  const auto row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  for_row_chunks(rows, cols, [=](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      std::memcpy(y + r * cols, table + ids[r] * cols, row_bytes);
  });
}

void embedding_bwd(const float* dy, const std::int64_t* ids, float* dtable, std::int64_t rows,
                   std::int64_t cols, std::int64_t vocab) {
  // Tokens with the same id add into the same row, so the tasks split the vocabulary, not the
  // tokens: each task zeroes its range of rows and adds in the tokens whose id falls in it (no
  // two tasks touch the same row; the sums do not depend on the threads). Every task scans all
  // ids, 8 bytes a token, little next to the table it zeroes.
  const std::int64_t tasks =
      std::clamp<std::int64_t>(vocab * cols / (4 * kChunk), 1, std::min(vocab, 8 * cores()));
  const std::int64_t per_task = ceil_div(vocab, tasks);
  parallel_for(tasks, [=](std::int64_t t) {
    const std::int64_t v0 = t * per_task, v1 = std::min(vocab, v0 + per_task);
    if (v0 < v1) embedding_bwd_range(dy, ids, dtable, rows, cols, v0, v1);
  });
}

void adamw(float* param, const float* grad, float* m, float* v, std::int64_t n,
           const AdamWParams& params) {
  const AdamWStep step = adamw_step(params);
  for_chunks(n, [=, &step](std::int64_t b, std::int64_t e) {
    adamw_range(param, grad, m, v, step, b, e);
  });
}

void adamw_bf16(float* param, const std::uint16_t* grad, float* m, float* v,
                std::uint16_t* param_bf16, std::int64_t n, const AdamWParams& params) {
  const AdamWStep step = adamw_step(params);
  for_chunks(n, [=, &step](std::int64_t b, std::int64_t e) {
    adamw_bf16_range(param, grad, m, v, param_bf16, step, b, e);
  });
}

void cast_to_bf16(const float* x, std::uint16_t* y, std::int64_t n) {
  for_chunks(n, [=](std::int64_t b, std::int64_t e) { cast_to_bf16_range(x, y, b, e); });
}

void cast_to_fp32(const std::uint16_t* x, float* y, std::int64_t n) {
  for_chunks(n, [=](std::int64_t b, std::int64_t e) { cast_to_fp32_range(x, y, b, e); });
}

void fp8_quantize(const std::uint16_t* x, const float* scale, std::uint8_t* y, float* amax,
                  std::int64_t n) {
  const auto table = fp8_table(*scale);
  const std::uint8_t* codes = table->data();
  const std::int64_t tasks = ceil_div(n, kChunk);
  std::vector<std::int32_t> chunk_amax(static_cast<std::size_t>(tasks), 0);
  std::int32_t* best = chunk_amax.data();
  parallel_for(tasks, [=](std::int64_t t) {
    best[t] = fp8_quantize_range(x, codes, y, t * kChunk, std::min(n, (t + 1) * kChunk));
  });
  *amax = bf16_decode(
      static_cast<std::uint16_t>(*std::max_element(chunk_amax.begin(), chunk_amax.end())));
}

void copy(const void* src, void* dst, std::size_t bytes) {
  constexpr std::size_t kBytes = std::size_t{1} << 20;  // 1 MiB a task
  const auto tasks = static_cast<std::int64_t>((bytes + kBytes - 1) / kBytes);
  parallel_for(tasks, [=](std::int64_t t) {
    const std::size_t begin = static_cast<std::size_t>(t) * kBytes;
    std::memcpy(static_cast<unsigned char*>(dst) + begin,
                static_cast<const unsigned char*>(src) + begin, std::min(kBytes, bytes - begin));
  });
}

// ---- the dispatch ----------------------------------------------------------------------------

namespace {

using Run = void (*)(const MemopCase& c, const OperandAddresses& a);

struct Dispatch {
  MemOp op;
  MemPass pass;
  Run run;
};

constexpr MemPass kFwd = MemPass::fwd, kBwd = MemPass::bwd;
constexpr auto kAdamW = memop_inputs::kAdamW;

// Each operator's loop and the operands it binds, by name (memop_operands' lists).
const Dispatch kDispatch[] = {
    {MemOp::rmsnorm, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       rmsnorm_fwd(a.as<float>("x"), a.as<float>("w"), a.as<float>("y"), a.as<float>("rstd"),
                   c.rows, c.cols);
     }},
    {MemOp::rmsnorm, kBwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       rmsnorm_bwd(a.as<float>("dy"), a.as<float>("x"), a.as<float>("w"), a.as<float>("rstd"),
                   a.as<float>("dx"), a.as<float>("dw"), a.as<float>("workspace"), c.rows, c.cols);
     }},
    {MemOp::add_rmsnorm, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       add_rmsnorm_fwd(a.as<float>("x"), a.as<float>("residual"), a.as<float>("w"),
                       a.as<float>("y"), a.as<float>("residual_out"), a.as<float>("rstd"), c.rows,
                       c.cols);
     }},
    {MemOp::layernorm, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       layernorm_fwd(a.as<float>("x"), a.as<float>("w"), a.as<float>("b"), a.as<float>("y"),
                     a.as<float>("mean"), a.as<float>("rstd"), c.rows, c.cols);
     }},
    {MemOp::layernorm, kBwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       layernorm_bwd(a.as<float>("dy"), a.as<float>("x"), a.as<float>("w"), a.as<float>("mean"),
                     a.as<float>("rstd"), a.as<float>("dx"), a.as<float>("dw"), a.as<float>("db"),
                     a.as<float>("workspace"), c.rows, c.cols);
     }},
    {MemOp::softmax, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       softmax_fwd(a.as<float>("x"), a.as<float>("y"), c.rows, c.cols);
     }},
    {MemOp::softmax, kBwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       softmax_bwd(a.as<float>("y"), a.as<float>("dy"), a.as<float>("dx"), c.rows, c.cols);
     }},
    {MemOp::rope, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       rope(a.as<float>("x"), a.as<float>("cos"), a.as<float>("sin"), a.as<float>("y"), c.rows,
            c.heads + c.kv_heads, c.head_dim, false);
     }},
    {MemOp::rope, kBwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       rope(a.as<float>("dy"), a.as<float>("cos"), a.as<float>("sin"), a.as<float>("dx"), c.rows,
            c.heads + c.kv_heads, c.head_dim, true);
     }},
    {MemOp::cross_entropy, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       cross_entropy(a.as<float>("logits"), a.as<std::int64_t>("targets"), a.as<float>("dlogits"),
                     a.as<float>("loss"), c.rows, c.cols);
     }},
    {MemOp::embedding, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       embedding_fwd(a.as<float>("table"), a.as<std::int64_t>("ids"), a.as<float>("y"), c.rows,
                     c.cols);
     }},
    {MemOp::embedding, kBwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       embedding_bwd(a.as<float>("dy"), a.as<std::int64_t>("ids"), a.as<float>("dtable"), c.rows,
                     c.cols, c.vocab);
     }},
    {MemOp::adamw, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       adamw(a.as<float>("param"), a.as<float>("grad"), a.as<float>("m"), a.as<float>("v"),
             c.elements(), kAdamW);
     }},
    {MemOp::adamw_bf16, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       adamw_bf16(a.as<float>("param"), a.as<std::uint16_t>("grad"), a.as<float>("m"),
                  a.as<float>("v"), a.as<std::uint16_t>("param_bf16"), c.elements(), kAdamW);
     }},
    {MemOp::cast_to_bf16, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       cast_to_bf16(a.as<float>("x"), a.as<std::uint16_t>("y"), c.elements());
     }},
    {MemOp::cast_to_fp32, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       cast_to_fp32(a.as<std::uint16_t>("x"), a.as<float>("y"), c.elements());
     }},
    {MemOp::fp8_quantize, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       fp8_quantize(a.as<std::uint16_t>("x"), a.as<float>("scale"), a.as<std::uint8_t>("y"),
                    a.as<float>("amax"), c.elements());
     }},
    {MemOp::copy, kFwd,
     [](const MemopCase& c, const OperandAddresses& a) {
       copy(a("src"), a("dst"), static_cast<std::size_t>(c.elements()) * dtype_size(c.dtype));
     }},
};

}  // namespace

void run(const MemopCase& c, const OperandAddresses& a) {
  const bool elementwise = elementwise::visit_elementwise(c.op, c.pass, [&](auto kernel) {
    using F = decltype(kernel);
    run_elementwise(c.op, c.pass,
                    elementwise::bind_elementwise<F, ElementwisePointers>(
                        [&](const char* name) { return a(name); }),
                    c.elements());
  });
  if (elementwise) return;
  for (const Dispatch& d : kDispatch)
    if (d.op == c.op && d.pass == c.pass) return d.run(c, a);
  throw std::logic_error("memops: the CPU provider has no " + memop_name(c.op));
}

}  // namespace opbench::cpu_memops
