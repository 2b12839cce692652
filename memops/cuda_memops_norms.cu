// CUDA kernels of bench_memops: RMSNorm and LayerNorm, forward and backward, and the residual
// add fused before RMSNorm (memops/cuda_memops.cuh).
//
// The forward passes (issue 41 item 2: RMSNorm forward reached 65% of an H200's roof, cuDNN's
// 76%): the row read once and held in registers between its reduction(s) and the write
// (memops/cuda_memops_rows.cuh: a block per row, a cluster on sm_90 and later where a block of
// 512 threads would not hold it), its weights read a vector at a time at the held columns (from
// L1/L2: one row for every row of x). Before, a block per row read the row twice. That kernel is
// kept for operands whose rows do not all start 16-byte aligned and for rows one block cannot
// hold (RMSNorm and the residual add past 16,384 elements, LayerNorm past 32,768).
//
// RMSNorm's backward (issue 41 item 2): on an H200 it reached 1376 GB/s, 29% of the roof, where
// cuDNN's reached 3588: two blocks of 128 threads an SM (about 12% occupancy), dy, x and w read
// twice, and an fp32 partial-dw row loaded and stored for every row. LayerNorm's backward had the
// same design, with a partial db row as well. Now both run one persistent kernel
// (norm_bwd_rows_kernel, planned by norm_bwd_plan; RmsBwd and LayerNormBwd give its arithmetic):
// one wave of blocks, up to 1024 threads an SM, each owning a contiguous run of rows; a thread
// holds its 16-byte vectors of w (loaded once) and its share of dw (and db) in registers across
// the block's rows, loads each row's dy and x once (the next row's while the block reduces this
// one, where the registers allow), reduces the row over the block, writes dx from the registers,
// and writes its dw (and db) once, into the block's partial rows, which the column reduction
// (sum_partials_kernel) adds up: dy and x read once, w once a block, the partials once a block.
// Rows of more than 8 elements a thread of 1024 (past 8192 columns: Llama 3.1 405B's 16,384 in
// bf16, whose w, dw and two rows would spill past 64 registers), or operands not 16-byte
// aligned, keep the block-per-row kernels. The per-element arithmetic is memop_math's
// (rms_bwd_c, rms_bwd_dx, rms_bwd_dw; layernorm_xhat, layernorm_bwd_dx), the CPU loops'.
// Target: at least 85% of the same run's device-to-device copy rate on an H100 or H200, and
// never below cuDNN's RMSNorm backward on the same GPU. NOT YET RUN ON A GPU: compiled for sm_80,
// sm_90 and sm_100 (ptxas: see the report of issue 41); the figures are pending a GPU run.
#include "memops/cuda_memops_rows.cuh"

namespace opbench::cuda_memops {
namespace {

// ---- one block per row, the row read twice (operands not 16-byte aligned; longer rows) --------

template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    rmsnorm_fwd_kernel(const S* x, const S* w, S* y, float* rstd, std::int64_t rows, int cols) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V];
      load<V>(x, base + c * V, a);
#pragma unroll
      for (int j = 0; j < V; ++j)
        ss += a[j] * a[j];
    }
    ss = block_all_reduce(ss, AddFloat{}, 0.0f);
    const float rs = rms_rstd(ss, cols, kRmsNormEps);
    if (threadIdx.x == 0) rstd[row] = rs;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V], g[V];
      load<V>(x, base + c * V, a);
      load<V>(w, c * V, g);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = a[j] * rs * g[j];  // HF's order, as the CPU loop: (x rstd) w
      store<V>(y, base + c * V, a);
    }
  }
}

// h = x + residual, stored as the residual out, and its row's sum of squares in one pass; then y
// = (h rstd) w, h recomputed from x and residual (read again, from L1/L2) in fp32.
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    add_rmsnorm_fwd_kernel(const S* x, const S* residual, const S* w, S* y, S* h, float* rstd,
                           std::int64_t rows, int cols) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V], r[V];
      load<V>(x, base + c * V, a);
      load<V>(residual, base + c * V, r);
      ss += residual_add_squares(a, r);
      store<V>(h, base + c * V, a);
    }
    ss = block_all_reduce(ss, AddFloat{}, 0.0f);
    const float rs = rms_rstd(ss, cols, kRmsNormEps);
    if (threadIdx.x == 0) rstd[row] = rs;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V], r[V], g[V];
      load<V>(x, base + c * V, a);
      load<V>(residual, base + c * V, r);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = residual_add(a[j], r[j]);
      load<V>(w, c * V, g);  // after the add, r's registers free (sm_100 spilled otherwise)
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = rms_scale(a[j], rs, g[j]);
      store<V>(y, base + c * V, a);
    }
  }
}

// dx = rstd (w dy - x rstd^2 mean(w dy x)); the block's share of dw = sum dy x rstd goes to its
// partial row (each column always by the same thread: no race, no atomics).
template <int V, class S>
__global__ void __launch_bounds__(kNormBwdMaxThreads)
    rmsnorm_bwd_kernel(const S* dy, const S* x, const S* w, const float* rstd, S* dx,
                       float* partial_w, std::int64_t rows, int cols) {
  const int vectors = cols / V;
  float* pw = partial_w + static_cast<std::int64_t>(blockIdx.x) * cols;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const bool first = row == blockIdx.x;
    const std::int64_t base = row * cols;
    float dot = 0.0f;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V], a[V], g[V];
      load<V>(dy, base + c * V, d);
      load<V>(x, base + c * V, a);
      load<V>(w, c * V, g);
#pragma unroll
      for (int j = 0; j < V; ++j)
        dot += d[j] * g[j] * a[j];
    }
    dot = block_all_reduce(dot, AddFloat{}, 0.0f);
    const float rs = rstd[row];
    const float k = rs * rs * dot / static_cast<float>(cols);
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V], a[V], g[V], p[V];
      load<V>(dy, base + c * V, d);
      load<V>(x, base + c * V, a);
      load<V>(w, c * V, g);
      if (first) {
#pragma unroll
        for (int j = 0; j < V; ++j)
          p[j] = 0.0f;
      } else {
        load<V>(pw, c * V, p);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        p[j] += d[j] * a[j] * rs;
        d[j] = rs * (d[j] * g[j] - a[j] * k);
      }
      store<V>(dx, base + c * V, d);
      store<V>(pw, c * V, p);
    }
  }
}

// The per-element arithmetic of a persistent backward (norm_bwd_rows_kernel), memop_math's as the
// CPU loop's. An Op has kGrads weight gradients (dw, and db), Row (the row's saved statistics,
// read where its dy and x are), Sum and Merge (the row's reduction), and
//   add(sum, dy, x, w, row)         an element's term of the reduction (the CPU loop's order)
//   coef(sum, row, inv_cols)        what dx needs of the reduced row
//   grad(dy, x, w, coef, acc)       dx, and the element's terms added to acc[kGrads]
struct RmsBwd {
  static constexpr int kGrads = 1;
  struct Row {
    float rs;
  };
  using Sum = float;
  using Merge = AddFloat;
  struct Coef {
    float rs, c;
  };
  const float* rstd;

  __device__ Row row(std::int64_t r) const { return {rstd[r]}; }
  __device__ static Sum none() { return 0.0f; }
  __device__ static void add(Sum& s, float d, float a, float g, const Row&) {
    s += d * g * a;  // (dy w) x
  }
  __device__ static Coef coef(Sum s, const Row& r, float inv_cols) {
    return {r.rs, rms_bwd_c(r.rs, s, inv_cols)};
  }
  __device__ static float grad(float d, float a, float g, const Coef& k, float (&acc)[kGrads]) {
    acc[0] += rms_bwd_dw(d, a, k.rs);
    return rms_bwd_dx(d, a, g, k.rs, k.c);
  }
};

struct LayerNormBwd {
  static constexpr int kGrads = 2;
  struct Row {
    float mu, rs;
  };
  using Sum = SumPair;  // sum g, sum g xhat (g = dy w)
  using Merge = AddPairs;
  struct Coef {
    float mu, rs, mean_g, mean_gx;
  };
  const float* mean;
  const float* rstd;

  __device__ Row row(std::int64_t r) const { return {mean[r], rstd[r]}; }
  __device__ static Sum none() { return {0.0f, 0.0f}; }
  __device__ static void add(Sum& s, float d, float a, float g, const Row& r) {
    const float gj = d * g;
    s.a += gj;
    s.b += gj * layernorm_xhat(a, r.mu, r.rs);
  }
  __device__ static Coef coef(Sum s, const Row& r, float inv_cols) {
    return {r.mu, r.rs, s.a * inv_cols, s.b * inv_cols};
  }
  __device__ static float grad(float d, float a, float g, const Coef& k, float (&acc)[kGrads]) {
    const float xhat = layernorm_xhat(a, k.mu, k.rs);
    acc[0] += d * xhat;
    acc[1] += d;
    return layernorm_bwd_dx(d, g, xhat, k.rs, k.mean_g, k.mean_gx);
  }
};

// A norm's persistent backward (norm_bwd_plan): block b owns rows [b rows_per_block, ...);
// thread t holds vectors t + i blockDim.x (i < ITEMS) of every row, with w and its share of the
// weight gradients in registers across the block's rows; each gradient is written once, to the
// block's partial row g (partials + (g gridDim.x + b) cols), which sum_partials adds up.
// kPrefetch (norm_bwd_loads_ahead of kLiveWords, for the architecture compiled): the next row's
// dy, x and statistics are loaded before this row's reduction (both rows' vectors then live at
// once).
template <int V, int ITEMS, int kLiveWords, class Op, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    norm_bwd_rows_kernel(Op op, const S* dy, const S* x, const S* w, S* dx, float* partials,
                         std::int64_t rows, int cols, std::int64_t rows_per_block) {
#ifdef __CUDA_ARCH__
  constexpr bool kPrefetch = norm_bwd_loads_ahead(kLiveWords, ITEMS, __CUDA_ARCH__ / 100);
#else
  constexpr bool kPrefetch = false;  // the host's pass: a launch stub, the body never runs
#endif
  constexpr int kGrads = Op::kGrads;
  const int vectors = cols / V;
  int at[ITEMS];
  bool has[ITEMS];
  uint4 wv[ITEMS];
  float acc[ITEMS][V][kGrads];
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * static_cast<int>(blockDim.x);
    has[i] = v < vectors;
    at[i] = v * V;
    wv[i] = has[i] ? load_raw(w, at[i]) : zero;
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int k = 0; k < kGrads; ++k)
        acc[i][j][k] = 0.0f;
  }
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * rows_per_block;
  const std::int64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  uint4 next_dy[ITEMS], next_x[ITEMS];
  typename Op::Row next_row{};
  auto fetch = [&](std::int64_t r, uint4(&d)[ITEMS], uint4(&a)[ITEMS], typename Op::Row& row) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      d[i] = has[i] ? load_raw(dy, r * cols + at[i]) : zero;
      a[i] = has[i] ? load_raw(x, r * cols + at[i]) : zero;
    }
    row = op.row(r);
  };
  if (kPrefetch && r0 < r1) fetch(r0, next_dy, next_x, next_row);
  for (std::int64_t r = r0; r < r1; ++r) {
    uint4 cur_dy[ITEMS], cur_x[ITEMS];
    typename Op::Row row;
    if constexpr (kPrefetch) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        cur_dy[i] = next_dy[i];
        cur_x[i] = next_x[i];
      }
      row = next_row;
      if (r + 1 < r1) fetch(r + 1, next_dy, next_x, next_row);
    } else {
      fetch(r, cur_dy, cur_x, row);
    }
    typename Op::Sum sum = Op::none();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      float d[V], a[V], g[V];
      decode<V, S>(cur_dy[i], d);
      decode<V, S>(cur_x[i], a);
      decode<V, S>(wv[i], g);
#pragma unroll
      for (int j = 0; j < V; ++j)
        Op::add(sum, d[j], a[j], g[j], row);  // zeros where !has: no term
    }
    const auto k = Op::coef(block_all_reduce(sum, typename Op::Merge{}, Op::none()), row, inv_cols);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (!has[i]) continue;
      float d[V], a[V], g[V];
      decode<V, S>(cur_dy[i], d);
      decode<V, S>(cur_x[i], a);
      decode<V, S>(wv[i], g);
#pragma unroll
      for (int j = 0; j < V; ++j)
        d[j] = Op::grad(d[j], a[j], g[j], k, acc[i][j]);
      store<V>(dx, r * cols + at[i], d);
    }
  }
#pragma unroll
  for (int k = 0; k < kGrads; ++k) {
    float* p = partials + (static_cast<std::int64_t>(k) * gridDim.x + blockIdx.x) * cols;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (!has[i]) continue;
      float out[V];
#pragma unroll
      for (int j = 0; j < V; ++j)
        out[j] = acc[i][j][k];
      store<V>(p, at[i], out);
    }
  }
}

// y = (x - mean) rstd w + b from Welford's statistics: each 16-byte vector's own mean and M2 in
// registers (welford_of), merged into the thread's (Chan et al.), then across the block.
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    layernorm_fwd_kernel(const S* x, const S* w, const S* b, S* y, float* mean, float* rstd,
                         std::int64_t rows, int cols) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * cols;
    Welford acc{};
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V];
      load<V>(x, base + c * V, a);
      acc = welford_merge(acc, welford_of(a));
    }
    acc = block_all_reduce(acc, MergeWelford{}, Welford{});
    const RowStats st = welford_stats(acc, kLayerNormEps);
    if (threadIdx.x == 0) {
      mean[row] = st.mean;
      rstd[row] = st.rstd;
    }
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V], g[V], h[V];
      load<V>(x, base + c * V, a);
      load<V>(w, c * V, g);
      load<V>(b, c * V, h);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = (a[j] - st.mean) * st.rstd * g[j] + h[j];
      store<V>(y, base + c * V, a);
    }
  }
}

// With xhat = (x - mean) rstd and g = w dy: dx = rstd (g - mean(g) - xhat mean(g xhat)); the
// block's shares of dw = sum dy xhat and db = sum dy go to its partial rows.
template <int V, class S>
__global__ void __launch_bounds__(kNormBwdMaxThreads)
    layernorm_bwd_kernel(const S* dy, const S* x, const S* w, const float* mean, const float* rstd,
                         S* dx, float* partial_w, float* partial_b, std::int64_t rows, int cols) {
  const int vectors = cols / V;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  float* pw = partial_w + static_cast<std::int64_t>(blockIdx.x) * cols;
  float* pb = partial_b + static_cast<std::int64_t>(blockIdx.x) * cols;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const bool first = row == blockIdx.x;
    const std::int64_t base = row * cols;
    const float mu = mean[row], rs = rstd[row];
    SumPair sums{0.0f, 0.0f};  // sum g, sum g xhat
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V], a[V], g[V];
      load<V>(dy, base + c * V, d);
      load<V>(x, base + c * V, a);
      load<V>(w, c * V, g);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float gj = d[j] * g[j];
        sums.a += gj;
        sums.b += gj * layernorm_xhat(a[j], mu, rs);
      }
    }
    sums = block_all_reduce(sums, AddPairs{}, SumPair{0.0f, 0.0f});
    const float mean_g = sums.a * inv_cols, mean_gx = sums.b * inv_cols;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V], a[V], g[V], p[V], q[V];
      load<V>(dy, base + c * V, d);
      load<V>(x, base + c * V, a);
      load<V>(w, c * V, g);
      if (first) {
#pragma unroll
        for (int j = 0; j < V; ++j)
          p[j] = q[j] = 0.0f;
      } else {
        load<V>(pw, c * V, p);
        load<V>(pb, c * V, q);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float xhat = layernorm_xhat(a[j], mu, rs);
        p[j] += d[j] * xhat;
        q[j] += d[j];
        d[j] = layernorm_bwd_dx(d[j], g[j], xhat, rs, mean_g, mean_gx);
      }
      store<V>(dx, base + c * V, d);
      store<V>(pw, c * V, p);
      store<V>(pb, c * V, q);
    }
  }
}

// ---- the forward passes with the row in registers (memops/cuda_memops_rows.cuh) -------------

// RMSNorm of the held row h: rstd from its sum of squares over the block or cluster (written once
// a row, by its first block's thread 0), then y = (h rstd) w stored.
template <class S, class Part, class Red>
__device__ void rms_normalise(std::int64_t row, const Part& p, Red& reducer,
                              float (&a)[Part::kItems][Part::kV], float edge, const S* w, S* y,
                              float* rstd, int cols) {
  const float ss = p.held_sum(a, edge, [](float v) { return v * v; });
  const float rs = rms_rstd(reducer.all(ss, AddFloat{}, 0.0f), cols, kRmsNormEps);
  if (p.edges && threadIdx.x == 0) rstd[row] = rs;
  p.store_with_weights(y, a, w, static_cast<const S*>(nullptr),
                       [rs](float& v, float g, float) { v = rms_scale(v, rs, g); });
}

// y = (x rstd) w, rstd from the row's sum of squares. Registers as for two held rows: with 32
// floats of the row a thread (fp32, 8 vectors) the IEEE square root and division of rms_rstd
// spilled 36 bytes on sm_90 (ptxas -v), with 16 nothing.
template <class S>
struct RmsNormRows {
  static constexpr int kHeld = 2;
  static constexpr bool kSplits = false;
  static constexpr bool kStreams = false;
  // fused_rows_kernel's registers (ptxas, CUDA 13, sm_80/90/100: the least without a spill):
  // 8 floats of the row a thread, or two vectors of one block: 32, the SM full.
  __host__ __device__ static constexpr int registers(int items, bool cluster) {
    return items * vec_of<S>() <= 8 || (items <= 2 && !cluster) ? 32 : 40;
  }
  const S* x;
  const S* w;
  S* y;
  float* rstd;
  int cols;

  __device__ const S* lead() const { return x; }
  template <class Part, class Red>
  __device__ void fused(std::int64_t row, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], edge;
    p.load(x, a, edge, 0.0f);
    rms_normalise(row, p, reducer, a, edge, w, y, rstd, cols);
  }
};

// h = x + residual (stored: the residual stream goes on), then y = (h rstd) w from h as held, in
// fp32 (the CPU loop's order: memop_math::residual_add, then rms_scale).
template <class S>
struct AddRmsNormRows {
  static constexpr int kHeld = 2;
  static constexpr bool kSplits = false;
  static constexpr bool kStreams = false;
  // fused_rows_kernel's registers (as RmsNormRows'): the residual's vector beside the row's.
  __host__ __device__ static constexpr int registers(int items, bool) {
    return items * vec_of<S>() <= 8 ? 32 : 40;
  }
  const S* x;
  const S* residual;
  const S* w;
  S* y;
  S* h;
  float* rstd;
  int cols;

  __device__ const S* lead() const { return x; }
  template <class Part, class Red>
  __device__ void fused(std::int64_t row, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], r[Part::kItems][Part::kV], ea, er;
    p.load(x, a, ea, 0.0f);
    p.load(residual, r, er, 0.0f);
#pragma unroll
    for (int i = 0; i < Part::kItems; ++i)
#pragma unroll
      for (int j = 0; j < Part::kV; ++j)
        a[i][j] = residual_add(a[i][j], r[i][j]);
    ea = residual_add(ea, er);
    p.store(h, a, ea);
    rms_normalise(row, p, reducer, a, ea, w, y, rstd, cols);
  }
};

// y = (x - mean) rstd w + b, the mean and the centred squares from the held row (two reductions,
// the CPU loop's two passes: memop_math::row_mean, layernorm_rstd), no second read.
template <class S>
struct LayerNormRows {
  static constexpr int kHeld = 1;
  static constexpr bool kSplits = false;
  static constexpr bool kStreams = false;
  // fused_rows_kernel's registers (as RmsNormRows'): b's vector beside w's, and the mean: 16
  // floats of the row a thread (bf16 at 4096 columns) take 40 (1536 threads an SM), 48 in a
  // cluster.
  __host__ __device__ static constexpr int registers(int items, bool cluster) {
    const int floats = items * vec_of<S>();
    return floats <= 8 ? 32 : floats <= 16 ? (cluster ? 48 : 40) : 64;
  }
  const S* x;
  const S* w;
  const S* b;
  S* y;
  float* mean;
  float* rstd;
  int cols;

  __device__ const S* lead() const { return x; }
  template <class Part, class Red>
  __device__ void fused(std::int64_t row, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], edge;
    p.load(x, a, edge, 0.0f);
    const float sum = p.held_sum(a, edge, [](float v) { return v; });
    const float mu = row_mean(reducer.all(sum, AddFloat{}, 0.0f), cols);
    // The slots not held are left out (their fill, 0, is not the mean).
    const float centred = p.held_sum(a, edge, [mu](float v) { return (v - mu) * (v - mu); });
    const float rs = layernorm_rstd(reducer.all(centred, AddFloat{}, 0.0f), cols, kLayerNormEps);
    if (p.edges && threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
    p.store_with_weights(y, a, w, b,
                         [mu, rs](float& v, float g, float bias) { v = (v - mu) * rs * g + bias; });
  }
};

// A norm's forward: the Op that make(S{}, cols) gives with the row in registers, where every
// operand's rows start 16-byte aligned (`addresses`, their pointers or'ed; the weight rows'
// vectors are then aligned at the held columns) and one block or cluster holds a row; else the
// two-pass kernel, which launch_rows launches through `two_pass` (its arguments).
template <class Make, class TwoPass>
void norm_forward(DType t, const char* op, const char* kernel, std::uintptr_t addresses,
                  std::int64_t rows, std::int64_t cols, const Launch& l, const char* remark,
                  Make make, TwoPass two_pass) {
  const int c = checked_int(cols, "cols", op);
  if (rows <= 0) return;
  bool held = false;
  with_storage(t, op, [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    held = row_vector_elements(kVectorBytes / kV, addresses, c) == kV &&
           launch_register_rows<S>(make(tag, c), rows, c, nullptr, l, kernel);
  });
  if (!held) launch_rows(t, op, kernel, addresses, rows, cols, l, remark, two_pass);
}

// out[j] = the sum over `count` partial rows of column j, in S. Blocks of 32 columns x 8 lanes
// of partial rows (coalesced 128-byte rows per warp); the 8 lane sums meet in shared memory.
constexpr int kPartialCols = 32, kPartialLanes = 8;

template <class S>
__global__ void __launch_bounds__(kPartialCols* kPartialLanes)
    sum_partials_kernel(const float* partials, int count, int cols, S* out) {
  __shared__ float lane_sums[kPartialLanes][kPartialCols + 1];
  const int j = static_cast<int>(blockIdx.x) * kPartialCols + static_cast<int>(threadIdx.x);
  float s = 0.0f;
  if (j < cols)
    for (int p = threadIdx.y; p < count; p += kPartialLanes)
      s += partials[static_cast<std::int64_t>(p) * cols + j];
  lane_sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    float t[1] = {lane_sums[0][threadIdx.x]};
    for (int l = 1; l < kPartialLanes; ++l)
      t[0] += lane_sums[l][threadIdx.x];
    store<1>(out, j, t);
  }
}

}  // namespace

void rmsnorm_fwd(DType t, const void* x, const void* w, void* y, float* rstd, std::int64_t rows,
                 std::int64_t cols, const Launch& l) {
  norm_forward(
      t, "rmsnorm", "rmsnorm_fwd_kernel", address_bits(x, w, y), rows, cols, l, "",
      [&](auto tag, int c) {
        using S = decltype(tag);
        return RmsNormRows<S>{static_cast<const S*>(x), static_cast<const S*>(w),
                              static_cast<S*>(y), rstd, c};
      },
      [&](auto tag, auto v, unsigned grid, int threads, int c) {
        using S = decltype(tag);
        rmsnorm_fwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
            static_cast<const S*>(x), static_cast<const S*>(w), static_cast<S*>(y), rstd, rows, c);
      });
}

void add_rmsnorm_fwd(DType t, const void* x, const void* residual, const void* w, void* y, void* h,
                     float* rstd, std::int64_t rows, std::int64_t cols, const Launch& l) {
  norm_forward(
      t, "add_rmsnorm", "add_rmsnorm_fwd_kernel", address_bits(x, residual, w, y, h), rows, cols, l,
      " (the residual add fused)",
      [&](auto tag, int c) {
        using S = decltype(tag);
        return AddRmsNormRows<S>{static_cast<const S*>(x),
                                 static_cast<const S*>(residual),
                                 static_cast<const S*>(w),
                                 static_cast<S*>(y),
                                 static_cast<S*>(h),
                                 rstd,
                                 c};
      },
      [&](auto tag, auto v, unsigned grid, int threads, int c) {
        using S = decltype(tag);
        add_rmsnorm_fwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
            static_cast<const S*>(x), static_cast<const S*>(residual), static_cast<const S*>(w),
            static_cast<S*>(y), static_cast<S*>(h), rstd, rows, c);
      });
}

std::int64_t norm_bwd_workspace_floats(DType t, std::int64_t rows, std::int64_t cols,
                                       int sm_count) {
  const int vec = kVectorBytes / static_cast<int>(dtype_size(t));
  const std::int64_t persistent = norm_bwd_plan(rows, cols, vec, sm_count).blocks;
  const std::int64_t per_row = norm_bwd_blocks(rows, sm_count);
  return 2 * (persistent > per_row ? persistent : per_row) * cols;
}

namespace {

template <class S>
void launch_sum_partials(const float* partials, std::int64_t count, int cols, void* out,
                         cudaStream_t stream) {
  const dim3 block(kPartialCols, kPartialLanes);
  const auto blocks = static_cast<unsigned>((cols + kPartialCols - 1) / kPartialCols);
  const cudaError_t pending = take_pending_cuda_error();
  sum_partials_kernel<S>
      <<<blocks, block, 0, stream>>>(partials, static_cast<int>(count), cols, static_cast<S*>(out));
  check_launch(pending, "sum_partials_kernel");
}

std::string norm_bwd_text(const char* kernel, const char* type, int vec, std::int64_t blocks,
                          int threads, std::int64_t rows, int cols, int reductions) {
  return fmt::format(
      "{}<{}> x{}: {} blocks x {} threads (a block per row at a time, {} rows each, partial "
      "sums of {} in fp32{}), then {} x sum_partials: {} blocks x {} threads",
      kernel, type, vec, blocks, threads, (rows + blocks - 1) / blocks,
      reductions == 1 ? "dw" : "dw and db", vec == 1 ? "; scalar: rows not 16-byte aligned" : "",
      reductions, (cols + kPartialCols - 1) / kPartialCols, kPartialCols * kPartialLanes);
}

// The words a thread of the persistent kernel holds while a row's dx is computed, with the next
// row loaded ahead (norm_bwd_loads_ahead): for each of its `items` vectors w and the next row's
// dy and x (raw: 4 each) and the gradients; the computed vector's dy, x and w as floats; the
// row's coefficients.
template <class Op, class S>
constexpr int norm_bwd_live_words(int items) {
  constexpr int kV = vec_of<S>();
  return items * (12 + Op::kGrads * kV) + 3 * kV +
         static_cast<int>(sizeof(typename Op::Coef) / sizeof(float));
}

// The persistent kernel for plan `p`, its ITEMS vectors a thread; false when p's items are not
// ITEMS.
template <int ITEMS, class Op, class S>
bool launch_norm_bwd_rows(const NormBwdPlan& p, const Op& op, const S* dy, const S* x, const S* w,
                          S* dx, float* partials, std::int64_t rows, int cols, const Launch& l) {
  constexpr int kV = vec_of<S>();
  if (p.items != ITEMS) return false;
  norm_bwd_rows_kernel<kV, ITEMS, norm_bwd_live_words<Op, S>(ITEMS)>
      <<<grid_of(p.blocks), p.threads, 0, l.stream>>>(op, dy, x, w, dx, partials, rows, cols,
                                                      p.rows_per_block);
  return true;
}

// A norm's backward by the persistent kernel (norm_bwd_plan), then a column reduction of each
// gradient's partial rows into grads[k]; false where the plan has no threads (rows too long) or
// an operand is not 16-byte aligned (`vec` elements a vector): the caller's block-per-row kernel.
template <class Op, class S>
bool norm_bwd_persistent(const char* name, const Op& op, const S* dy, const S* x, const S* w, S* dx,
                         void* const (&grads)[Op::kGrads], float* workspace, std::int64_t rows,
                         int cols, int vec, const Launch& l) {
  constexpr int kV = vec_of<S>();
  const NormBwdPlan plan = norm_bwd_plan(rows, cols, kV, l.sm_count);
  if (vec != kV || plan.threads <= 0) return false;
  const cudaError_t pending = take_pending_cuda_error();
  if (!launch_norm_bwd_rows<1>(plan, op, dy, x, w, dx, workspace, rows, cols, l))
    if constexpr (2 * kV <= kNormBwdMostElements)
      launch_norm_bwd_rows<2>(plan, op, dy, x, w, dx, workspace, rows, cols, l);
  check_launch(pending, "norm_bwd_rows_kernel");
  for (int k = 0; k < Op::kGrads; ++k)
    launch_sum_partials<S>(workspace + k * plan.blocks * cols, plan.blocks, cols, grads[k],
                           l.stream);
  if (l.shape) {
    const char* named = Op::kGrads == 1 ? "dw" : "dw and db";
    describe(l, fmt::format("{}_bwd_rows<{}> x{}: {} blocks x {} threads, {} vector{} a thread "
                            "(persistent: {} rows a block, w and {} in registers across them, dy "
                            "and x read once{}, {} written once a block), then {} x sum_partials: "
                            "{} blocks x {} threads",
                            name, Codec<S>::kName, kV, plan.blocks, plan.threads, plan.items,
                            plan.items == 1 ? "" : "s", plan.rows_per_block, named,
                            norm_bwd_loads_ahead(norm_bwd_live_words<Op, S>(plan.items), plan.items,
                                                 l.cc_major)
                                ? ", the next row's while this one is reduced"
                                : "",
                            named, Op::kGrads, (cols + kPartialCols - 1) / kPartialCols,
                            kPartialCols * kPartialLanes));
  }
  return true;
}

}  // namespace

void rmsnorm_bwd(DType t, const void* dy, const void* x, const void* w, const float* rstd, void* dx,
                 void* dw, float* workspace, std::int64_t rows, std::int64_t cols,
                 const Launch& l) {
  const int c = checked_int(cols, "cols", "rmsnorm");
  if (rows <= 0) return;
  with_storage(t, "rmsnorm", [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    const int vec =
        row_vector_elements(kVectorBytes / kV, address_bits(dy, x, w, dx, workspace), cols);
    const auto *dys = static_cast<const S*>(dy), *xs = static_cast<const S*>(x),
               *ws = static_cast<const S*>(w);
    auto* dxs = static_cast<S*>(dx);
    void* const grads[1] = {dw};
    if (norm_bwd_persistent("rmsnorm", RmsBwd{rstd}, dys, xs, ws, dxs, grads, workspace, rows, c,
                            vec, l))
      return;
    const int threads = row_block_threads(cols, vec, kNormBwdMaxThreads);
    const std::int64_t blocks = norm_bwd_blocks(rows, l.sm_count);
    const cudaError_t pending = take_pending_cuda_error();
    if (vec == kV)
      rmsnorm_bwd_kernel<kV>
          <<<grid_of(blocks), threads, 0, l.stream>>>(dys, xs, ws, rstd, dxs, workspace, rows, c);
    else
      rmsnorm_bwd_kernel<1>
          <<<grid_of(blocks), threads, 0, l.stream>>>(dys, xs, ws, rstd, dxs, workspace, rows, c);
    check_launch(pending, "rmsnorm_bwd_kernel");
    launch_sum_partials<S>(workspace, blocks, c, dw, l.stream);
    if (l.shape)
      describe(l, norm_bwd_text("rmsnorm_bwd", Codec<S>::kName, vec, blocks, threads, rows, c, 1));
  });
}

void layernorm_fwd(DType t, const void* x, const void* w, const void* b, void* y, float* mean,
                   float* rstd, std::int64_t rows, std::int64_t cols, const Launch& l) {
  norm_forward(
      t, "layernorm", "layernorm_fwd_kernel", address_bits(x, w, b, y), rows, cols, l, "",
      [&](auto tag, int c) {
        using S = decltype(tag);
        return LayerNormRows<S>{static_cast<const S*>(x),
                                static_cast<const S*>(w),
                                static_cast<const S*>(b),
                                static_cast<S*>(y),
                                mean,
                                rstd,
                                c};
      },
      [&](auto tag, auto v, unsigned grid, int threads, int c) {
        using S = decltype(tag);
        layernorm_fwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
            static_cast<const S*>(x), static_cast<const S*>(w), static_cast<const S*>(b),
            static_cast<S*>(y), mean, rstd, rows, c);
      });
}

void layernorm_bwd(DType t, const void* dy, const void* x, const void* w, const float* mean,
                   const float* rstd, void* dx, void* dw, void* db, float* workspace,
                   std::int64_t rows, std::int64_t cols, const Launch& l) {
  const int c = checked_int(cols, "cols", "layernorm");
  if (rows <= 0) return;
  with_storage(t, "layernorm", [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    const auto *dys = static_cast<const S*>(dy), *xs = static_cast<const S*>(x),
               *ws = static_cast<const S*>(w);
    auto* dxs = static_cast<S*>(dx);
    // Both kernels' partial rows start 16-byte aligned: the workspace does, and each gradient's
    // rows follow a whole number of rows of `cols` floats, which vec_of's vectors divide.
    const int vec =
        row_vector_elements(kVectorBytes / kV, address_bits(dy, x, w, dx, workspace), cols);
    void* const grads[2] = {dw, db};
    if (norm_bwd_persistent("layernorm", LayerNormBwd{mean, rstd}, dys, xs, ws, dxs, grads,
                            workspace, rows, c, vec, l))
      return;
    const std::int64_t blocks = norm_bwd_blocks(rows, l.sm_count);
    float* partial_w = workspace;
    float* partial_b = workspace + blocks * cols;
    const int threads = row_block_threads(cols, vec, kNormBwdMaxThreads);
    const cudaError_t pending = take_pending_cuda_error();
    if (vec == kV)
      layernorm_bwd_kernel<kV><<<grid_of(blocks), threads, 0, l.stream>>>(
          dys, xs, ws, mean, rstd, dxs, partial_w, partial_b, rows, c);
    else
      layernorm_bwd_kernel<1><<<grid_of(blocks), threads, 0, l.stream>>>(
          dys, xs, ws, mean, rstd, dxs, partial_w, partial_b, rows, c);
    check_launch(pending, "layernorm_bwd_kernel");
    launch_sum_partials<S>(partial_w, blocks, c, dw, l.stream);
    launch_sum_partials<S>(partial_b, blocks, c, db, l.stream);
    if (l.shape)
      describe(l,
               norm_bwd_text("layernorm_bwd", Codec<S>::kName, vec, blocks, threads, rows, c, 2));
  });
}

}  // namespace opbench::cuda_memops
