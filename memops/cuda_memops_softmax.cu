// CUDA kernels of bench_memops: softmax forward and backward, and cross-entropy's loss and
// gradient in one kernel (memops/cuda_memops.cuh).
//
// Design (issue 41 item 2). On an H200 softmax forward reached 33% of the memory roof and
// cross-entropy at a vocabulary of 128,256 37%: the old kernels took a software exp twice per
// element and a software bf16 rounding (issue-bound), and read each row twice, the second time
// from DRAM where the rows in flight outgrew the L2 (cross-entropy's 256 KB bf16 rows at 1024
// threads a block keep 66 MB live). Now:
// - the row is read once and held in registers (memops/cuda_memops_rows.cuh) between the
//   reductions and the write: its max (a block and, across blocks, a cluster reduction), then
//   e = 2^((x - max) log2 e), once per element (an FADD, an FMUL and one ex2.approx,
//   fast_math::exp_shifted: the largest term exactly 1 however large the logits) kept in place of
//   x, their sum, then y = e / sum (one IEEE division a row) stored through cvt.rn.bf16x2.f32;
// - a row of up to 16,384 elements (512 threads of 32 floats' registers: 4 vectors of bf16, 8 of
//   fp32, max_row_items) is one block of up to 512 threads (two or more blocks an SM, whose
//   reductions overlap each other's loads), up to 32,768 one block of 1024; beyond, on sm_90 and
//   later, a thread block cluster of up to 8 blocks holds the row, their partial max and sum
//   exchanged through distributed shared memory (cross-entropy at 128,256 bf16: 8 blocks of 512
//   threads, 4 vectors a thread; at 256,000: 8 of 1024), so the row is still read from DRAM once.
//   Without clusters (sm_80), or past 8 blocks, the row is split: chunks of 512 threads' items
//   write their max and sum, a second kernel merges them and writes the row, reading it again (from
//   L2 where it still is);
// - a row whose length is not a multiple of the vector (GPT-2's 50,257) is read in 16-byte
//   vectors between its unaligned head and tail, which the first block's first threads take
//   element by element (memops/cuda_memops.cuh, row_split);
// - -inf is a masked logit: exactly 0, and a row of nothing but -inf NaN, as torch.softmax.
// Softmax's backward holds y and dy the same way (dx = y (dy - sum y dy)).
// Operands whose rows do not split alike (one not 16-byte aligned like the others; never with
// the provider's allocations) take the old one-block-per-row kernels below, which read the row
// twice with an online max and sum.
// Target: at least 85% of the same run's device-to-device copy rate on an H100 or H200, and
// never below torch.softmax / torch.nn.functional.cross_entropy on the same GPU. NOT YET RUN ON
// A GPU: compiled for sm_80, sm_90 and sm_100; the figures are pending a GPU run.
#include "memops/cuda_memops_rows.cuh"

namespace opbench::cuda_memops {
namespace {

// ---- operands whose rows do not split alike: one block per row, the row read twice ----------

// The row's max and sum of e^(x - max) in one pass (max_sum_add per vector, max_sum_merge across
// the block).
template <int V, class S>
__device__ __forceinline__ MaxSum row_max_sum(const S* x, std::int64_t base, int vectors) {
  MaxSum ms = empty_max_sum();
  for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
    float a[V];
    load<V>(x, base + c * V, a);
    ms = max_sum_add(ms, a);
  }
  return block_all_reduce(ms, MergeMaxSum{}, empty_max_sum());
}

template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    softmax_fwd_kernel(const S* x, S* y, std::int64_t rows, int cols) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * cols;
    const MaxSum ms = row_max_sum<V>(x, base, vectors);
    const float inv = 1.0f / ms.sum;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V];
      load<V>(x, base + c * V, a);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = exp_or_zero(a[j] - ms.max) * inv;
      store<V>(y, base + c * V, a);
    }
  }
}

template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    softmax_bwd_kernel(const S* y, const S* dy, S* dx, std::int64_t rows, int cols) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * cols;
    float dot = 0.0f;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V], d[V];
      load<V>(y, base + c * V, a);
      load<V>(dy, base + c * V, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        dot += a[j] * d[j];
    }
    dot = block_all_reduce(dot, AddFloat{}, 0.0f);
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V], d[V];
      load<V>(y, base + c * V, a);
      load<V>(dy, base + c * V, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = a[j] * (d[j] - dot);
      store<V>(dx, base + c * V, a);
    }
  }
}

// loss = max + log(sum) - x[target]; dlogits = e^(x - max) / (sum rows), minus 1/rows at the
// target (the CPU loop's order: scale, then subtract).
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    cross_entropy_kernel(const S* x, const std::int64_t* targets, S* dx, float* loss,
                         std::int64_t rows, int cols) {
  const int vectors = cols / V;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * cols;
    const MaxSum ms = row_max_sum<V>(x, base, vectors);
    const std::int64_t target = targets[row];
    const bool valid = target >= 0 && target < cols;
    if (threadIdx.x == 0) {
      float xt[1] = {__uint_as_float(0x7FC00000u)};  // NaN: no valid target
      if (valid) load<1>(x, base + target, xt);
      loss[row] = valid ? ms.max + ::logf(ms.sum) - xt[0] : xt[0];
    }
    const float scale = inv_rows / ms.sum;
    const int at = valid ? static_cast<int>(target) : -1;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V];
      load<V>(x, base + c * V, a);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        a[j] = exp_or_zero(a[j] - ms.max) * scale;
        if (c * V + j == at) a[j] -= inv_rows;
      }
      store<V>(dx, base + c * V, a);
    }
  }
}

// ---- the row in registers (memops/cuda_memops_rows.cuh) ------------------------------------

// The thread's largest element.
template <int I, int V>
__device__ float local_max(const float (&a)[I][V], float edge) {
  float m = edge;
#pragma unroll
  for (int i = 0; i < I; ++i)
#pragma unroll
    for (int j = 0; j < V; ++j)
      m = ::fmaxf(m, a[i][j]);
  return m;
}

// Every element x becomes e^(x - max) (exp_shifted: 0 for -inf, every term 0 when max is -inf);
// their sum is returned.
template <int I, int V>
__device__ float exps(float (&a)[I][V], float& edge, float max) {
  const float shift = fast_math::exp_origin(max);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < I; ++i)
#pragma unroll
    for (int j = 0; j < V; ++j) {
      a[i][j] = fast_math::exp_shifted<fast_math::Hardware>(a[i][j], shift);
      sum += a[i][j];
    }
  edge = fast_math::exp_shifted<fast_math::Hardware>(edge, shift);
  return sum + edge;
}

// The row's max and sum of e^(x - max) over the blocks `reducer` spans, the elements of `a`
// becoming their e^(x - max).
template <class Red, int I, int V>
__device__ MaxSum max_and_exps(Red& reducer, float (&a)[I][V], float& edge) {
  const float m = reducer.all(local_max(a, edge), MaxFloat{}, -INFINITY);
  return {m, reducer.all(exps(a, edge, m), AddFloat{}, 0.0f)};
}

// The rows of x whose softmax, and whose max and sum (the normaliser), Finish writes: Finish
// gives the destination (out()), the value written for e = e^(x - max) at a column (map(row,
// total) returns that function, g) and what else a row writes (after(part, g, row, total)). Held in
// registers (fused, the split's chunk_stats and chunk_finish) or, for rows that take a cluster,
// streamed through shared memory (streamed: RowPart's slots).
template <class S, class Finish>
struct ExpRows {
  static constexpr int kHeld = 1;
  static constexpr bool kSplits = true;
  static constexpr bool kStreams = true;
  // fused_rows_kernel's registers: 64, the launch bound of blocks of kRowMaxThreads (no budget:
  // softmax ran at 96-99% of the H200's copy; cross-entropy's long rows are streamed).
  __host__ __device__ static constexpr int registers(int, bool) { return 64; }
  using Stats = MaxSum;
  const S* x;
  Finish finish;

  __device__ const S* lead() const { return x; }
  __device__ static MaxSum empty() { return empty_max_sum(); }
  __device__ static MaxSum merge(MaxSum a, MaxSum b) {
    return fast_max_sum_merge<fast_math::Hardware>(a, b);
  }

  // The row's part from its e^(x - max), held in `a` and `edge`.
  template <class Part, int I, int V>
  __device__ void write(std::int64_t row, const Part& p, float (&a)[I][V], float& edge,
                        MaxSum total) const {
    const auto g = finish.map(row, total);
    p.each(a, edge, [&](float& v, int col) { v = g(v, col); });
    p.store(finish.out(), a, edge);
    finish.after(p, g, row, total);
  }

  template <class Part, class Red>
  __device__ void fused(std::int64_t row, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], edge;
    p.load(x, a, edge, -INFINITY);
    write(row, p, a, edge, max_and_exps(reducer, a, edge));
  }
  template <class Part, class Red>
  __device__ MaxSum chunk_stats(std::int64_t, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], edge;
    p.load(x, a, edge, -INFINITY);
    return max_and_exps(reducer, a, edge);
  }
  // The chunk's e^(x - max) again, against the row's max.
  template <class Part>
  __device__ void chunk_finish(std::int64_t row, const Part& p, MaxSum total) const {
    float a[Part::kItems][Part::kV], edge;
    p.load(x, a, edge, -INFINITY);
    exps(a, edge, total.max);
    write(row, p, a, edge, total);
  }

  // The row's part in this thread's shared-memory slots (streamed_rows_kernel copied it there):
  // read three times, for the max, for the sum of e^(x - max) and to write the row; e^(x - max)
  // is computed for the sum and again for the write.
  template <class Part, class Red>
  __device__ void streamed(std::int64_t row, const Part& p, const uint4* slots,
                           Red& reducer) const {
    float edge;
    p.load_edge(x, edge, -INFINITY);
    const float m =
        reducer.all(p.template slots_fold<S>(slots, edge, MaxFloat{}), MaxFloat{}, -INFINITY);
    const float shift = fast_math::exp_origin(m);
    auto e = [shift](float v) { return fast_math::exp_shifted<fast_math::Hardware>(v, shift); };
    // (the edge's fill, -inf, adds e(-inf) = 0)
    const float sum =
        p.template slots_fold<S>(slots, e(edge), [&](float acc, float v) { return acc + e(v); });
    const MaxSum total{m, reducer.all(sum, AddFloat{}, 0.0f)};
    const auto g = finish.map(row, total);
    p.template store_slots<S>(finish.out(), slots, edge,
                              [&](float v, int col) { return g(e(v), col); });
    finish.after(p, g, row, total);
  }
};

// y = e^(x - max) / sum: one division a row (0 x (1/0) = NaN for a row of nothing but -inf).
template <class S>
struct SoftmaxOut {
  S* y;
  __device__ S* out() const { return y; }
  __device__ auto map(std::int64_t, MaxSum total) const {
    const float inv = 1.0f / total.sum;
    return [inv](float e, int) { return e * inv; };
  }
  template <class Part, class Map>
  __device__ void after(const Part&, const Map&, std::int64_t, MaxSum) const {}
};

// dlogits = e^(x - max) / (sum rows), minus 1/rows at the target (the CPU loop's order: scale,
// then subtract); the row's first block's thread 0 writes the loss, max + log(sum) - x[target]
// (NaN for a target outside [0, cols)).
struct CrossEntropyMap {
  int at;  // the target's column; -1 for a target outside [0, cols)
  float scale, minus;
  __device__ float operator()(float e, int col) const {
    const float v = e * scale;
    return col == at ? v - minus : v;
  }
};
template <class S>
struct CrossEntropyOut {
  const S* x;
  const std::int64_t* targets;
  S* dx;
  float* loss;
  int cols;
  float inv_rows;
  __device__ S* out() const { return dx; }
  __device__ CrossEntropyMap map(std::int64_t row, MaxSum total) const {
    const std::int64_t target = targets[row];
    const int at = target >= 0 && target < cols ? static_cast<int>(target) : -1;
    return {at, inv_rows / total.sum, inv_rows};
  }
  template <class Part>
  __device__ void after(const Part& p, const CrossEntropyMap& g, std::int64_t row,
                        MaxSum total) const {
    if (!p.edges || threadIdx.x != 0) return;
    float xt[1] = {__uint_as_float(0x7FC00000u)};  // NaN: no valid target
    if (g.at >= 0) load<1>(x, p.base + g.at, xt);
    loss[row] = g.at >= 0 ? total.max + ::logf(total.sum) - xt[0] : xt[0];
  }
};

// dx = y (dy - sum y dy), y and dy held.
template <class S>
struct SoftmaxBwdRows {
  static constexpr int kHeld = 2;
  static constexpr bool kSplits = true;
  static constexpr bool kStreams = false;
  // fused_rows_kernel's registers: 64, the launch bound of blocks of kRowMaxThreads (no budget:
  // softmax's backward ran at 102-104% of the H200's copy).
  __host__ __device__ static constexpr int registers(int, bool) { return 64; }
  using Stats = float;
  const S* y;
  const S* dy;
  S* dx;

  __device__ const S* lead() const { return y; }
  __device__ static float empty() { return 0.0f; }
  __device__ static float merge(float a, float b) { return a + b; }

  template <int I, int V>
  __device__ static float dot(const float (&a)[I][V], const float (&d)[I][V], float ea, float ed) {
    float s = ea * ed;
#pragma unroll
    for (int i = 0; i < I; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j)
        s += a[i][j] * d[i][j];
    return s;
  }
  template <class Part, int I, int V>
  __device__ void write(const Part& p, float (&a)[I][V], float& ea, const float (&d)[I][V],
                        float ed, float total) const {
#pragma unroll
    for (int i = 0; i < I; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[i][j] = a[i][j] * (d[i][j] - total);
    ea = ea * (ed - total);
    p.store(dx, a, ea);
  }
  template <class Part, class Red>
  __device__ void fused(std::int64_t, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], d[Part::kItems][Part::kV], ea, ed;
    p.load(y, a, ea, 0.0f);
    p.load(dy, d, ed, 0.0f);
    const float total = reducer.all(dot(a, d, ea, ed), AddFloat{}, 0.0f);
    write(p, a, ea, d, ed, total);
  }
  template <class Part, class Red>
  __device__ float chunk_stats(std::int64_t, const Part& p, Red& reducer) const {
    float a[Part::kItems][Part::kV], d[Part::kItems][Part::kV], ea, ed;
    p.load(y, a, ea, 0.0f);
    p.load(dy, d, ed, 0.0f);
    return reducer.all(dot(a, d, ea, ed), AddFloat{}, 0.0f);
  }
  template <class Part>
  __device__ void chunk_finish(std::int64_t, const Part& p, float total) const {
    float a[Part::kItems][Part::kV], d[Part::kItems][Part::kV], ea, ed;
    p.load(y, a, ea, 0.0f);
    p.load(dy, d, ed, 0.0f);
    write(p, a, ea, d, ed, total);
  }
};

// Whether every operand's rows split as the first one's (same address modulo 16).
template <class... P>
bool rows_split_alike(const void* first, const P*... others) {
  const auto a = reinterpret_cast<std::uintptr_t>(first);
  return (same_phase(a, reinterpret_cast<std::uintptr_t>(others)) && ...);
}

}  // namespace

std::int64_t row_stats_workspace_bytes(DType t, MemOp op, MemPass pass, std::int64_t rows,
                                       std::int64_t cols) {
  if (op != MemOp::softmax && op != MemOp::cross_entropy) return 0;
  const int held = op == MemOp::softmax && pass == MemPass::bwd ? 2 : 1;
  return split_stats_bytes(rows, cols, static_cast<int>(dtype_size(t)), held);
}

void softmax_fwd(DType t, const void* x, void* y, void* workspace, std::int64_t rows,
                 std::int64_t cols, const Launch& l) {
  const int c = checked_int(cols, "cols", "softmax");
  if (rows <= 0) return;
  if (rows_split_alike(x, y))
    return with_storage(t, "softmax", [&](auto tag) {
      using S = decltype(tag);
      const ExpRows<S, SoftmaxOut<S>> op{static_cast<const S*>(x), {static_cast<S*>(y)}};
      launch_register_rows<S>(op, rows, c, workspace, l, "softmax_fwd_kernel");
    });
  launch_rows(t, "softmax", "softmax_fwd_kernel", address_bits(x, y), rows, cols, l,
              " (online max and sum; the rows of x and y not 16-byte aligned alike)",
              [&](auto tag, auto v, unsigned grid, int threads, int n) {
                using S = decltype(tag);
                softmax_fwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
                    static_cast<const S*>(x), static_cast<S*>(y), rows, n);
              });
}

void softmax_bwd(DType t, const void* y, const void* dy, void* dx, void* workspace,
                 std::int64_t rows, std::int64_t cols, const Launch& l) {
  const int c = checked_int(cols, "cols", "softmax");
  if (rows <= 0) return;
  if (rows_split_alike(y, dy, dx))
    return with_storage(t, "softmax", [&](auto tag) {
      using S = decltype(tag);
      const SoftmaxBwdRows<S> op{static_cast<const S*>(y), static_cast<const S*>(dy),
                                 static_cast<S*>(dx)};
      launch_register_rows<S>(op, rows, c, workspace, l, "softmax_bwd_kernel");
    });
  launch_rows(t, "softmax", "softmax_bwd_kernel", address_bits(y, dy, dx), rows, cols, l,
              " (the rows of y, dy and dx not 16-byte aligned alike)",
              [&](auto tag, auto v, unsigned grid, int threads, int n) {
                using S = decltype(tag);
                softmax_bwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
                    static_cast<const S*>(y), static_cast<const S*>(dy), static_cast<S*>(dx), rows,
                    n);
              });
}

void cross_entropy(DType t, const void* logits, const std::int64_t* targets, void* dlogits,
                   float* loss, void* workspace, std::int64_t rows, std::int64_t cols,
                   const Launch& l) {
  const int c = checked_int(cols, "cols", "cross_entropy");
  if (rows <= 0) return;
  if (rows_split_alike(logits, dlogits))
    return with_storage(t, "cross_entropy", [&](auto tag) {
      using S = decltype(tag);
      const auto* x = static_cast<const S*>(logits);
      const CrossEntropyOut<S> out{x,    targets, static_cast<S*>(dlogits),
                                   loss, c,       1.0f / static_cast<float>(rows)};
      const ExpRows<S, CrossEntropyOut<S>> op{x, out};
      launch_register_rows<S>(op, rows, c, workspace, l, "cross_entropy_kernel");
    });
  launch_rows(
      t, "cross_entropy", "cross_entropy_kernel", address_bits(logits, dlogits), rows, cols, l,
      " (online max and sum, loss and gradient in one kernel; the rows of the logits and "
      "their gradient not 16-byte aligned alike)",
      [&](auto tag, auto v, unsigned grid, int threads, int n) {
        using S = decltype(tag);
        cross_entropy_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
            static_cast<const S*>(logits), targets, static_cast<S*>(dlogits), loss, rows, n);
      });
}

}  // namespace opbench::cuda_memops
