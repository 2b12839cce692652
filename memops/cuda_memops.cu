// CUDA kernels of the memory-bound operators: see memops/cuda_memops.cuh for the kernels, their
// launch shapes and the sources they follow. The arithmetic is memop_math's (the CPU loops run
// the same functions); this file adds the memory access (16-byte vectors, storage types) and the
// reductions across a block.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/cuda/check.hpp"
#include "common/error.hpp"
#include "memops/cuda_memops.cuh"
#include "memops/elementwise.hpp"
#include "memops/memop_math.hpp"

namespace opbench::cuda_memops {
namespace {

using namespace memop_math;

// ---- storage types ----------------------------------------------------------------------------

// Device memory holds fp32, bf16 and fp16 activations (and e4m3 codes); kernels compute in fp32.
// bf16 converts with memop_math's encoder (round to nearest even, as the CPU loops do, so both
// round alike to the bit), fp16 with CUDA's __float2half_rn (round to nearest even, as the
// host's float_to_fp16 that the check uses).
struct Bf16 {
  std::uint16_t bits;
};
struct Fp16 {
  std::uint16_t bits;
};
struct Fp8E4m3 {
  std::uint8_t bits;
};

template <class S>
struct Codec;

template <>
struct Codec<float> {
  using Bits = std::uint32_t;
  static constexpr const char* kName = "fp32";
  __device__ static float decode(Bits b) { return __uint_as_float(b); }
  __device__ static Bits encode(float f) { return __float_as_uint(f); }
};

template <>
struct Codec<Bf16> {
  using Bits = std::uint16_t;
  static constexpr const char* kName = "bf16";
  __device__ static float decode(Bits b) { return bf16_decode(b); }
  __device__ static Bits encode(float f) { return bf16_encode(f); }
};

template <>
struct Codec<Fp16> {
  using Bits = std::uint16_t;
  static constexpr const char* kName = "fp16";
  __device__ static float decode(Bits b) { return __half2float(__ushort_as_half(b)); }
  __device__ static Bits encode(float f) { return __half_as_ushort(__float2half_rn(f)); }
};

template <>
struct Codec<Fp8E4m3> {  // written only
  using Bits = std::uint8_t;
  __device__ static Bits encode(float f) { return fp8_e4m3_encode(f); }
};

// ---- loads and stores -------------------------------------------------------------------------

// V elements from element i of p, as floats. V = 1: one scalar access. V > 1: V x sizeof(S)
// must be a multiple of 16 and p + i 16-byte aligned: one uint4 (a single 128-bit access) per 16
// bytes, unpacked little-endian (element 2k of a bf16 pair is the low half of word k).
template <int V, class S>
__device__ __forceinline__ void load(const S* p, std::int64_t i, float (&out)[V]) {
  using C = Codec<S>;
  using Bits = typename C::Bits;
  const Bits* b = reinterpret_cast<const Bits*>(p) + i;
  if constexpr (V == 1) {
    out[0] = C::decode(*b);
  } else {
    static_assert(V * sizeof(Bits) % kVectorBytes == 0, "whole 16-byte vectors only");
    constexpr int kPerWord = 4 / sizeof(Bits);
    constexpr int kQuads = V * sizeof(Bits) / kVectorBytes;
    const uint4* q = reinterpret_cast<const uint4*>(b);
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
      const uint4 w = q[k];
      const std::uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < kPerWord; ++e)
          out[(k * 4 + j) * kPerWord + e] =
              C::decode(static_cast<Bits>(words[j] >> (8 * sizeof(Bits) * e)));
    }
  }
}

// V floats encoded into S at element i of p, with the same vectors as load (CUDA C++ Programming
// Guide, "Store Functions Using Cache Hints", for __stwb).
template <int V, class S>
__device__ __forceinline__ void store(S* p, std::int64_t i, const float (&in)[V]) {
  using C = Codec<S>;
  using Bits = typename C::Bits;
  Bits* b = reinterpret_cast<Bits*>(p) + i;
  if constexpr (V == 1) {
    *b = C::encode(in[0]);
  } else {
    static_assert(V * sizeof(Bits) % kVectorBytes == 0, "whole 16-byte vectors only");
    constexpr int kPerWord = 4 / sizeof(Bits);
    constexpr int kQuads = V * sizeof(Bits) / kVectorBytes;
    uint4* q = reinterpret_cast<uint4*>(b);
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
      std::uint32_t words[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        std::uint32_t word = 0;
#pragma unroll
        for (int e = 0; e < kPerWord; ++e)
          word |= static_cast<std::uint32_t>(C::encode(in[(k * 4 + j) * kPerWord + e]))
                  << (8 * sizeof(Bits) * e);
        words[j] = word;
      }
      // __stwb: st.global.wb.v4.u32, the default write-back store as one 128-bit access. A
      // plain uint4 assignment may be split into four 32-bit stores by the optimizer when it
      // loses track of the alignment (seen with nvcc 13 on row-indexed addresses).
      __stwb(q + k, make_uint4(words[0], words[1], words[2], words[3]));
    }
  }
}

// ---- reductions -------------------------------------------------------------------------------

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarp = 32;

struct SumPair {
  float a, b;
};

// A warp shuffle of any value made of 4-byte words (float, unsigned and the reduction states
// below): each word moves on its own, so one template serves every reduced type.
template <class R, class Shuffle>
__device__ __forceinline__ R shuffle_words(R v, Shuffle shuffle) {
  static_assert(std::is_trivially_copyable_v<R> && sizeof(R) % sizeof(unsigned) == 0,
                "a shuffled value is made of 4-byte words");
  unsigned words[sizeof(R) / sizeof(unsigned)];
  memcpy(words, &v, sizeof(R));
#pragma unroll
  for (unsigned& w : words)
    w = shuffle(w);
  memcpy(&v, words, sizeof(R));
  return v;
}
template <class R>
__device__ __forceinline__ R shfl_xor(R v, int o) {
  return shuffle_words(v, [o](unsigned w) { return __shfl_xor_sync(kFullMask, w, o); });
}
template <class R>
__device__ __forceinline__ R shfl_from(R v, int lane) {
  return shuffle_words(v, [lane](unsigned w) { return __shfl_sync(kFullMask, w, lane); });
}

struct AddFloat {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxBits {
  __device__ unsigned operator()(unsigned a, unsigned b) const { return a > b ? a : b; }
};
struct AddPairs {
  __device__ SumPair operator()(SumPair x, SumPair y) const { return {x.a + y.a, x.b + y.b}; }
};
struct MergeMaxSum {
  __device__ MaxSum operator()(MaxSum x, MaxSum y) const { return max_sum_merge(x, y); }
};
struct MergeWelford {
  __device__ Welford operator()(Welford x, Welford y) const { return welford_merge(x, y); }
};

// Every lane gets lane 0's result of the butterfly: a merge that is not symmetric to the bit
// (Welford's) would otherwise leave lanes with slightly different statistics for one row.
template <class R, class Merge>
__device__ __forceinline__ R warp_all_reduce(R v, Merge merge) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o /= 2)
    v = merge(v, shfl_xor(v, o));
  return shfl_from(v, 0);
}

// The reduction of every thread's v across the block, returned to every thread: warp shuffles,
// one value per warp through shared memory, then every warp reduces those (each the same way, so
// all threads agree). blockDim.x a multiple of 32, every thread of the block calling. The last
// barrier lets the caller reduce again straight away.
template <class R, class Merge>
__device__ R block_all_reduce(R v, Merge merge, R identity) {
  static_assert(sizeof(R) % sizeof(float) == 0, "reduced values are made of 4-byte words");
  __shared__ float words[kWarp * sizeof(R) / sizeof(float)];  // raw: R may not be trivial
  R* partial = reinterpret_cast<R*>(words);
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_all_reduce(v, merge);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  R r = lane < warps ? partial[lane] : identity;
  r = warp_all_reduce(r, merge);
  __syncthreads();
  return r;
}

// ---- elementwise ------------------------------------------------------------------------------

// Grid-stride over n elements in vectors of V, then the tail (n % V elements) element by element
// by the first threads.
template <int V, class Op>
__global__ void __launch_bounds__(kElementwiseThreads) elementwise_kernel(Op op, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t vectors = n / V;
  for (std::int64_t k = first; k < vectors; k += stride)
    op.template apply<V>(k * V);
  if constexpr (V > 1) {
    const std::int64_t i = vectors * V + first;
    if (i < n) op.template apply<1>(i);
  }
}

// One AdamW step in place over fp32 parameters and moments, the gradient stored as G (fp32 or
// bf16); with a bf16 gradient the updated parameters are written as bf16 too (p16), as a mixed-
// precision step does.
template <class G>
struct AdamWOp {
  float* p;
  const G* g;
  float* m;
  float* v;
  Bf16* p16;  // null for an fp32 gradient
  AdamWStep step;
  template <int V>
  __device__ void apply(std::int64_t i) const {
    float pp[V], gg[V], mm[V], vv[V];
    load<V>(p, i, pp);
    load<V>(g, i, gg);
    load<V>(m, i, mm);
    load<V>(v, i, vv);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const AdamWState s = adamw_update({pp[j], mm[j], vv[j]}, gg[j], step);
      pp[j] = s.param;
      mm[j] = s.m;
      vv[j] = s.v;
    }
    store<V>(p, i, pp);
    store<V>(m, i, mm);
    store<V>(v, i, vv);
    if constexpr (std::is_same_v<G, Bf16>) store<V>(p16, i, pp);
  }
};

template <class From, class To>
struct CastOp {
  const From* x;
  To* y;
  template <int V>
  __device__ void apply(std::int64_t i) const {
    float a[V];
    load<V>(x, i, a);
    store<V>(y, i, a);
  }
};

template <class S>
struct ScaleOp {
  S* x;
  float factor;
  template <int V>
  __device__ void apply(std::int64_t i) const {
    float a[V];
    load<V>(x, i, a);
#pragma unroll
    for (int j = 0; j < V; ++j)
      a[j] *= factor;
    store<V>(x, i, a);
  }
};

// An elementwise operator's kernel F (memops/elementwise.hpp) over storage S: an in-place kernel
// reads and writes out[0], the other inputs come from in[].
template <class S, class F>
struct ElementwiseOp {
  const S* in[3];
  S* out[2];
  template <int V>
  __device__ void apply(std::int64_t i) const {
    constexpr int first = F::kInPlace ? 1 : 0;
    constexpr int reads = F::kIn - first;
    float x[F::kIn + 1][V], y[F::kOut][V];  // + 1: a fill reads nothing
    if constexpr (F::kInPlace) load<V>(out[0], i, x[0]);
#pragma unroll
    for (int k = 0; k < reads; ++k)
      load<V>(in[k], i, x[first + k]);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float a[F::kIn + 1], b[F::kOut];
#pragma unroll
      for (int k = 0; k < F::kIn; ++k)
        a[k] = x[k][j];
      F{}(a, b);
#pragma unroll
      for (int k = 0; k < F::kOut; ++k)
        y[k][j] = b[k];
    }
#pragma unroll
    for (int k = 0; k < F::kOut; ++k)
      store<V>(out[k], i, y[k]);
  }
};

struct SecondMomentOp {
  const float* m;
  float* v;
  template <int V>
  __device__ void apply(std::int64_t i) const {
    float a[V];
    load<V>(m, i, a);
#pragma unroll
    for (int j = 0; j < V; ++j)
      a[j] = memop_inputs::adamw_second_moment(a[j]);
    store<V>(v, i, a);
  }
};

__global__ void fill_indices_kernel(std::int64_t* ids, std::int64_t n, std::uint64_t seed,
                                    std::int64_t set, std::int64_t range) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    ids[i] = memop_inputs::uniform_index(seed, set, i, range);
}

// ---- fp8 quantize -----------------------------------------------------------------------------

// W elements at i: their e4m3 codes written, and the largest |x| bits among them returned
// (non-negative floats order as their bit patterns do, so an unsigned max is the float max; NaN,
// above infinity, wins as in the CPU loop).
template <int W>
__device__ __forceinline__ unsigned quantize(const Bf16* x, float scale, Fp8E4m3* y,
                                             std::int64_t i) {
  float a[W];
  load<W>(x, i, a);
  unsigned best = 0;
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const unsigned bits = float_bits(a[j]) & 0x7FFFFFFFu;
    best = bits > best ? bits : best;
    a[j] = a[j] * scale;
  }
  store<W>(y, i, a);
  return best;
}

// One pass over x: each thread quantizes its vectors and keeps its amax, the block reduces them,
// and one atomicMax per block on amax's bits (zeroed beforehand) gives the tensor's amax.
template <int V>
__global__ void __launch_bounds__(kElementwiseThreads)
    fp8_quantize_kernel(const Bf16* x, const float* scale, Fp8E4m3* y, unsigned* amax_bits,
                        std::int64_t n) {
  const float s = *scale;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t vectors = n / V;
  unsigned best = 0;
  for (std::int64_t k = first; k < vectors; k += stride) {
    const unsigned b = quantize<V>(x, s, y, k * V);
    best = b > best ? b : best;
  }
  if constexpr (V > 1) {
    const std::int64_t i = vectors * V + first;
    if (i < n) {
      const unsigned b = quantize<1>(x, s, y, i);
      best = b > best ? b : best;
    }
  }
  best = block_all_reduce(best, MaxBits{}, 0u);
  if (threadIdx.x == 0 && best != 0) atomicMax(amax_bits, best);
}

// ---- row operators: one block per row ---------------------------------------------------------

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
        sums.b += gj * ((a[j] - mu) * rs);
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
        const float xhat = (a[j] - mu) * rs;
        p[j] += d[j] * xhat;
        q[j] += d[j];
        d[j] = rs * (d[j] * g[j] - mean_g - xhat * mean_gx);
      }
      store<V>(dx, base + c * V, d);
      store<V>(pw, c * V, p);
      store<V>(pb, c * V, q);
    }
  }
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
        a[j] = exp_approx(a[j] - ms.max) * inv;
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
        a[j] = exp_approx(a[j] - ms.max) * scale;
        if (c * V + j == at) a[j] -= inv_rows;
      }
      store<V>(dx, base + c * V, a);
    }
  }
}

// ---- rope -------------------------------------------------------------------------------------

// One block per token; each thread rotates V pairs (x[i..i+V), x[i+d/2..i+d/2+V)) of one head
// with the token's cos and sin of those pairs.
template <int V, bool kBackward, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    rope_kernel(const S* x, const float* cos, const float* sin, S* y, std::int64_t rows,
                int vectors, int head_dim) {
  const int half = head_dim / 2;
  const int per_head = half / V;
  const int items = vectors * per_head;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * vectors * head_dim;
    const std::int64_t table = row * half;
    for (int it = threadIdx.x; it < items; it += blockDim.x) {
      const int h = it / per_head;
      const int i = (it % per_head) * V;
      const std::int64_t lo = base + static_cast<std::int64_t>(h) * head_dim + i;
      float a[V], b[V], c[V], s[V];
      load<V>(x, lo, a);
      load<V>(x, lo + half, b);
      load<V>(cos, table + i, c);
      load<V>(sin, table + i, s);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const RopePair p = kBackward ? rope_rotate_back(a[j], b[j], c[j], s[j])
                                     : rope_rotate(a[j], b[j], c[j], s[j]);
        a[j] = p.lo;
        b[j] = p.hi;
      }
      store<V>(y, lo, a);
      store<V>(y, lo + half, b);
    }
  }
}

// ---- embedding --------------------------------------------------------------------------------

// A block per token copies its table row, in `Unit`s (uint4 when rows are whole 16-byte vectors).
template <class Unit>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_fwd_kernel(const Unit* table, const std::int64_t* ids, Unit* y, std::int64_t rows,
                         int units, std::int64_t vocab) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab) continue;
    const Unit* src = table + id * units;
    Unit* dst = y + row * units;
    for (int u = threadIdx.x; u < units; u += blockDim.x)
      dst[u] = src[u];
  }
}

// fp32 tables: a block per token adds its dy row into the table's row with fp32 atomics (RED
// operations, the result unused).
template <int V>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_scatter_fp32_kernel(const float* dy, const std::int64_t* ids, float* dtable,
                                  std::int64_t rows, int cols, std::int64_t vocab) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab) continue;
    float* dst = dtable + id * cols;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V];
      load<V>(dy, row * cols + c * V, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        atomicAdd(dst + c * V + j, d[j]);
    }
  }
}

// bf16 and fp16 tables, step 1: each vocabulary row used gets its lowest token index as owner
// (owner[] starts at 0xFFFFFFFF: none).
__global__ void embedding_claim_kernel(const std::int64_t* ids, unsigned* owner, std::int64_t rows,
                                       std::int64_t vocab) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += stride) {
    const std::int64_t id = ids[r];
    if (id >= 0 && id < vocab) atomicMin(owner + id, static_cast<unsigned>(r));
  }
}

// Step 2: every token adds its dy row, in fp32, into its owner's row of the scratch (zeroed).
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_scatter_owner_kernel(const S* dy, const std::int64_t* ids, const unsigned* owner,
                                   float* scratch, std::int64_t rows, int cols,
                                   std::int64_t vocab) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab) continue;
    float* dst = scratch + static_cast<std::int64_t>(owner[id]) * cols;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float d[V];
      load<V>(dy, row * cols + c * V, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        atomicAdd(dst + c * V + j, d[j]);
    }
  }
}

// Step 3: each owner rounds its row's fp32 sum once into the table.
template <int V, class S>
__global__ void __launch_bounds__(kRowMaxThreads)
    embedding_write_owner_kernel(const float* scratch, const std::int64_t* ids,
                                 const unsigned* owner, S* dtable, std::int64_t rows, int cols,
                                 std::int64_t vocab) {
  const int vectors = cols / V;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t id = ids[row];
    if (id < 0 || id >= vocab || owner[id] != static_cast<unsigned>(row)) continue;
    for (int c = threadIdx.x; c < vectors; c += blockDim.x) {
      float a[V];
      load<V>(scratch, row * cols + c * V, a);
      store<V>(dtable, id * cols + c * V, a);
    }
  }
}

// ---- host side ----------------------------------------------------------------------------------

template <class... P>
std::uintptr_t address_bits(const P*... ptrs) {
  return (reinterpret_cast<std::uintptr_t>(ptrs) | ...);
}

int checked_int(std::int64_t value, const char* what, const char* op) {
  if (value < 0 || value > std::numeric_limits<int>::max())
    throw run_failure(fmt::format("{}: {} = {} is outside our CUDA kernels' range (0 .. 2^31 - 1)",
                                  op, what, value));
  return static_cast<int>(value);
}

unsigned grid_of(std::int64_t blocks) {
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// Threads for `items` pieces of a row's work, whole warps, one to 32 of them.
int threads_for_items(std::int64_t items) {
  const std::int64_t t = (items + kWarp - 1) / kWarp * kWarp;
  return static_cast<int>(t < kWarp ? kWarp : t > kRowMaxThreads ? kRowMaxThreads : t);
}

void describe(const Launch& l, const std::string& text) {
  if (l.shape) *l.shape = text;
}

// After our launch(es), `pending` being what take_pending_cuda_error() took right before them
// (common/cuda/check.hpp: so an error an earlier call left is not reported as ours).
void check_launch(cudaError_t pending, const char* kernel) {
  check_launch_since(pending, kernel, __FILE__, __LINE__);
}

// Runs f(S{}) with S the storage type of t.
template <class F>
void with_storage(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::fp32:
      return f(float{});
    case DType::bf16:
      return f(Bf16{});
    case DType::fp16:
      return f(Fp16{});
    default:
      throw run_failure(
          fmt::format("{}: our CUDA kernels store fp32, bf16 or fp16, not {}", op, dtype_name(t)));
  }
}

// An elementwise operator: vectors of V elements when every operand is 16-byte aligned.
template <int V, class Op>
void launch_elementwise(const char* kernel, const char* type, const Op& op, std::int64_t n,
                        std::uintptr_t addresses, const Launch& l) {
  if (n <= 0) return;
  const int vec = vector_elements(kVectorBytes / V, addresses) == 1 ? 1 : V;
  const Grid g = elementwise_grid(n, vec, l.sm_count);
  const cudaError_t pending = take_pending_cuda_error();
  if (vec == V)
    elementwise_kernel<V><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(op, n);
  else
    elementwise_kernel<1><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(op, n);
  check_launch(pending, kernel);
  if (l.shape)
    describe(l, fmt::format("{}<{}> x{}: {} blocks x {} threads (grid-stride{})", kernel, type, vec,
                            g.blocks, g.threads,
                            vec == 1 ? ", scalar: an operand is not 16-byte aligned"
                                     : ", 16-byte vectors"));
}

template <class S>
constexpr int vec_of() {
  return kVectorBytes / static_cast<int>(sizeof(typename Codec<S>::Bits));
}

std::string row_text(const char* kernel, const char* type, int vec, std::int64_t blocks,
                     int threads, std::int64_t rows) {
  return fmt::format("{}<{}> x{}: {} blocks x {} threads (a block per row{}{})", kernel, type, vec,
                     blocks, threads, blocks < rows ? ", blocks striding over the rows" : "",
                     vec == 1 ? ", scalar: rows not 16-byte aligned" : "");
}

// A row kernel launched a block per row (striding when rows outnumber the grid), in vectors of
// the storage's 16 bytes when every row of every operand is aligned (`addresses`: the operands'
// pointers or'ed), else scalar. launch(S{}, V, grid, threads, cols) makes the launch itself, with
// V a std::integral_constant of the vector width. `kernel` (a literal: no formatting per launch)
// names a failed launch; the description reads it without "_kernel", then `remark`.
template <class F>
void launch_rows(DType t, const char* op, const char* kernel, std::uintptr_t addresses,
                 std::int64_t rows, std::int64_t cols, const Launch& l, const char* remark,
                 F&& launch) {
  const int c = checked_int(cols, "cols", op);
  if (rows <= 0) return;
  with_storage(t, op, [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    const int vec = row_vector_elements(kVectorBytes / kV, addresses, cols);
    const int threads = row_block_threads(cols, vec);
    const std::int64_t blocks = row_grid_blocks(rows);
    const cudaError_t pending = take_pending_cuda_error();
    if (vec == kV)
      launch(tag, std::integral_constant<int, kV>{}, grid_of(blocks), threads, c);
    else
      launch(tag, std::integral_constant<int, 1>{}, grid_of(blocks), threads, c);
    check_launch(pending, kernel);
    if (l.shape) {
      const std::string_view k(kernel);
      const std::string name(k.substr(0, k.rfind("_kernel")));
      describe(l, row_text(name.c_str(), Codec<S>::kName, vec, blocks, threads, rows) + remark);
    }
  });
}

}  // namespace

void run_elementwise(DType t, MemOp op, MemPass pass, const ElementwisePointers& p, std::int64_t n,
                     const Launch& l) {
  with_storage(t, memop_name(op).c_str(), [&](auto tag) {
    using S = decltype(tag);
    const bool known = elementwise::visit_elementwise(op, pass, [&](auto kernel) {
      using F = decltype(kernel);
      ElementwiseOp<S, F> e{};
      for (int k = 0; k < 3; ++k)
        e.in[k] = static_cast<const S*>(p.in[k]);
      for (int k = 0; k < 2; ++k)
        e.out[k] = static_cast<S*>(p.out[k]);
      // "add", "silu_bwd": the name the launch describes itself by.
      const std::string name =
          memop_name(op) + (has_backward(op) ? "_" + mem_pass_name(pass) : std::string());
      launch_elementwise<vec_of<S>()>(name.c_str(), Codec<S>::kName, e, n,
                                      address_bits(p.in[0], p.in[1], p.in[2], p.out[0], p.out[1]),
                                      l);
    });
    if (!known) throw std::logic_error("cuda_memops::run_elementwise: not an elementwise operator");
  });
}

void rmsnorm_fwd(DType t, const void* x, const void* w, void* y, float* rstd, std::int64_t rows,
                 std::int64_t cols, const Launch& l) {
  launch_rows(t, "rmsnorm", "rmsnorm_fwd_kernel", address_bits(x, w, y), rows, cols, l, "",
              [&](auto tag, auto v, unsigned grid, int threads, int c) {
                using S = decltype(tag);
                rmsnorm_fwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
                    static_cast<const S*>(x), static_cast<const S*>(w), static_cast<S*>(y), rstd,
                    rows, c);
              });
}

std::int64_t norm_bwd_workspace_floats(std::int64_t rows, std::int64_t cols, int sm_count) {
  return 2 * norm_bwd_blocks(rows, sm_count) * cols;
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
    const int threads = row_block_threads(cols, vec, kNormBwdMaxThreads);
    const std::int64_t blocks = norm_bwd_blocks(rows, l.sm_count);
    const auto *dys = static_cast<const S*>(dy), *xs = static_cast<const S*>(x),
               *ws = static_cast<const S*>(w);
    auto* dxs = static_cast<S*>(dx);
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
  launch_rows(t, "layernorm", "layernorm_fwd_kernel", address_bits(x, w, b, y), rows, cols, l, "",
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
    const std::int64_t blocks = norm_bwd_blocks(rows, l.sm_count);
    float* partial_w = workspace;
    float* partial_b = workspace + blocks * cols;
    const int vec = row_vector_elements(kVectorBytes / kV,
                                        address_bits(dy, x, w, dx, partial_w, partial_b), cols);
    const int threads = row_block_threads(cols, vec, kNormBwdMaxThreads);
    const auto *dys = static_cast<const S*>(dy), *xs = static_cast<const S*>(x),
               *ws = static_cast<const S*>(w);
    auto* dxs = static_cast<S*>(dx);
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

void softmax_fwd(DType t, const void* x, void* y, std::int64_t rows, std::int64_t cols,
                 const Launch& l) {
  launch_rows(t, "softmax", "softmax_fwd_kernel", address_bits(x, y), rows, cols, l,
              " (online max and sum)", [&](auto tag, auto v, unsigned grid, int threads, int c) {
                using S = decltype(tag);
                softmax_fwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
                    static_cast<const S*>(x), static_cast<S*>(y), rows, c);
              });
}

void softmax_bwd(DType t, const void* y, const void* dy, void* dx, std::int64_t rows,
                 std::int64_t cols, const Launch& l) {
  launch_rows(t, "softmax", "softmax_bwd_kernel", address_bits(y, dy, dx), rows, cols, l, "",
              [&](auto tag, auto v, unsigned grid, int threads, int c) {
                using S = decltype(tag);
                softmax_bwd_kernel<decltype(v)::value><<<grid, threads, 0, l.stream>>>(
                    static_cast<const S*>(y), static_cast<const S*>(dy), static_cast<S*>(dx), rows,
                    c);
              });
}

void rope(DType t, const void* x, const float* cos, const float* sin, void* y, std::int64_t rows,
          std::int64_t vectors, std::int64_t head_dim, bool backward, const Launch& l) {
  const int nv = checked_int(vectors, "heads", "rope");
  const int d = checked_int(head_dim, "head_dim", "rope");
  checked_int(vectors * head_dim, "cols", "rope");
  if (rows <= 0 || nv == 0) return;
  if (d < 2 || d % 2 != 0) throw run_failure(fmt::format("rope: head_dim {} is not even", d));
  with_storage(t, "rope", [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    // Vectors need each half head to be whole vectors of x (and of the fp32 tables).
    const int vec = row_vector_elements(kVectorBytes / kV, address_bits(x, cos, sin, y), d / 2);
    const int threads = threads_for_items(static_cast<std::int64_t>(nv) * (d / 2 / vec));
    const std::int64_t blocks = row_grid_blocks(rows);
    const auto* xs = static_cast<const S*>(x);
    auto* ys = static_cast<S*>(y);
    const unsigned grid = grid_of(blocks);
    const cudaError_t pending = take_pending_cuda_error();
    if (vec == kV && backward)
      rope_kernel<kV, true><<<grid, threads, 0, l.stream>>>(xs, cos, sin, ys, rows, nv, d);
    else if (vec == kV)
      rope_kernel<kV, false><<<grid, threads, 0, l.stream>>>(xs, cos, sin, ys, rows, nv, d);
    else if (backward)
      rope_kernel<1, true><<<grid, threads, 0, l.stream>>>(xs, cos, sin, ys, rows, nv, d);
    else
      rope_kernel<1, false><<<grid, threads, 0, l.stream>>>(xs, cos, sin, ys, rows, nv, d);
    check_launch(pending, "rope_kernel");
    if (l.shape)
      describe(l, fmt::format("rope_{}<{}> x{}: {} blocks x {} threads (a block per token, a "
                              "thread per head and {} pairs{})",
                              backward ? "bwd" : "fwd", Codec<S>::kName, vec, blocks, threads, vec,
                              vec == 1 ? "; scalar: half heads not 16-byte aligned" : ""));
  });
}

void cross_entropy(DType t, const void* logits, const std::int64_t* targets, void* dlogits,
                   float* loss, std::int64_t rows, std::int64_t cols, const Launch& l) {
  launch_rows(t, "cross_entropy", "cross_entropy_kernel", address_bits(logits, dlogits), rows, cols,
              l, " (online max and sum, loss and gradient in one kernel)",
              [&](auto tag, auto v, unsigned grid, int threads, int c) {
                using S = decltype(tag);
                cross_entropy_kernel<decltype(v)::value>
                    <<<grid, threads, 0, l.stream>>>(static_cast<const S*>(logits), targets,
                                                     static_cast<S*>(dlogits), loss, rows, c);
              });
}

void embedding_fwd(DType t, const void* table, const std::int64_t* ids, void* y, std::int64_t rows,
                   std::int64_t cols, std::int64_t vocab, const Launch& l) {
  checked_int(cols, "cols", "embedding");
  if (rows <= 0) return;
  with_storage(t, "embedding", [&](auto tag) {
    using S = decltype(tag);
    using Bits = typename Codec<S>::Bits;
    const std::int64_t row_bytes = cols * static_cast<std::int64_t>(sizeof(Bits));
    const bool wide = row_bytes % kVectorBytes == 0 && address_bits(table, y) % kVectorBytes == 0;
    const std::int64_t blocks = row_grid_blocks(rows);
    int units = 0, threads = 0;
    const cudaError_t pending = take_pending_cuda_error();
    if (wide) {
      units = static_cast<int>(row_bytes / kVectorBytes);
      threads = row_block_threads(units, 1);
      embedding_fwd_kernel<uint4><<<grid_of(blocks), threads, 0, l.stream>>>(
          static_cast<const uint4*>(table), ids, static_cast<uint4*>(y), rows, units, vocab);
    } else {
      units = static_cast<int>(cols);
      threads = row_block_threads(units, 1);
      embedding_fwd_kernel<Bits><<<grid_of(blocks), threads, 0, l.stream>>>(
          static_cast<const Bits*>(table), ids, static_cast<Bits*>(y), rows, units, vocab);
    }
    check_launch(pending, "embedding_fwd_kernel");
    if (l.shape)
      describe(l, fmt::format("embedding_fwd<{}>: {} blocks x {} threads (a block per token "
                              "copying its row in {}-byte units)",
                              Codec<S>::kName, blocks, threads,
                              wide ? kVectorBytes : static_cast<int>(sizeof(Bits))));
  });
}

std::int64_t embedding_bwd_workspace_bytes(DType t, std::int64_t rows, std::int64_t cols,
                                           std::int64_t vocab) {
  if (t == DType::fp32) return 0;
  const std::int64_t owner = (vocab * 4 + 255) / 256 * 256;
  return owner + rows * cols * 4;
}

void embedding_bwd(DType t, const void* dy, const std::int64_t* ids, void* dtable, void* workspace,
                   std::int64_t rows, std::int64_t cols, std::int64_t vocab, const Launch& l) {
  const int c = checked_int(cols, "cols", "embedding");
  if (rows > std::numeric_limits<unsigned>::max() - 1)
    throw run_failure(
        fmt::format("embedding: {} tokens is beyond our kernel's 32-bit owners", rows));
  with_storage(t, "embedding", [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = vec_of<S>();
    const auto table_bytes = static_cast<std::size_t>(vocab * cols) * sizeof(S);
    OPBENCH_CUDA_CHECK(cudaMemsetAsync(dtable, 0, table_bytes, l.stream));
    if (rows <= 0) return;
    const std::int64_t blocks = row_grid_blocks(rows);
    if constexpr (std::is_same_v<S, float>) {
      const int vec = row_vector_elements(4, address_bits(dy), cols);
      const int threads = row_block_threads(cols, vec);
      const auto* dys = static_cast<const float*>(dy);
      auto* dt = static_cast<float*>(dtable);
      const cudaError_t pending = take_pending_cuda_error();
      if (vec == kV)
        embedding_scatter_fp32_kernel<kV>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, dt, rows, c, vocab);
      else
        embedding_scatter_fp32_kernel<1>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, dt, rows, c, vocab);
      check_launch(pending, "embedding_scatter_fp32_kernel");
      if (l.shape)
        describe(l, fmt::format("memset of the table's gradient, then "
                                "embedding_scatter<fp32> x{}: {} blocks x {} threads (a block "
                                "per token, fp32 atomicAdd into the table)",
                                vec, blocks, threads));
    } else {
      auto* owner = static_cast<unsigned*>(workspace);
      float* scratch = reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) +
                                                (vocab * 4 + 255) / 256 * 256);
      OPBENCH_CUDA_CHECK(
          cudaMemsetAsync(owner, 0xFF, static_cast<std::size_t>(vocab) * 4, l.stream));
      OPBENCH_CUDA_CHECK(cudaMemsetAsync(
          scratch, 0, static_cast<std::size_t>(rows * cols) * sizeof(float), l.stream));
      const Grid claim = elementwise_grid(rows, 1, l.sm_count);
      cudaError_t pending = take_pending_cuda_error();
      embedding_claim_kernel<<<grid_of(claim.blocks), claim.threads, 0, l.stream>>>(ids, owner,
                                                                                    rows, vocab);
      check_launch(pending, "embedding_claim_kernel");
      const int vec =
          row_vector_elements(kVectorBytes / kV, address_bits(dy, dtable, scratch), cols);
      const int threads = row_block_threads(cols, vec);
      const auto* dys = static_cast<const S*>(dy);
      auto* dt = static_cast<S*>(dtable);
      pending = take_pending_cuda_error();
      if (vec == kV) {
        embedding_scatter_owner_kernel<kV>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, owner, scratch, rows, c, vocab);
        check_launch(pending, "embedding_scatter_owner_kernel");
        embedding_write_owner_kernel<kV>
            <<<grid_of(blocks), threads, 0, l.stream>>>(scratch, ids, owner, dt, rows, c, vocab);
      } else {
        embedding_scatter_owner_kernel<1>
            <<<grid_of(blocks), threads, 0, l.stream>>>(dys, ids, owner, scratch, rows, c, vocab);
        check_launch(pending, "embedding_scatter_owner_kernel");
        embedding_write_owner_kernel<1>
            <<<grid_of(blocks), threads, 0, l.stream>>>(scratch, ids, owner, dt, rows, c, vocab);
      }
      check_launch(pending, "embedding_write_owner_kernel");
      if (l.shape)
        describe(l, fmt::format(
                        "memset of the table's gradient, embedding_claim: {} blocks x {} threads "
                        "(the lowest token of each id owns it), embedding_scatter_owner<{}> x{} "
                        "and embedding_write_owner: {} blocks x {} threads (a block per token; "
                        "fp32 atomicAdd into the owner's scratch row, rounded once into the "
                        "table)",
                        claim.blocks, claim.threads, Codec<S>::kName, vec, blocks, threads));
    }
  });
}

void adamw(float* param, const float* grad, float* m, float* v, std::int64_t n,
           const AdamWParams& params, const Launch& l) {
  const AdamWOp<float> op{param, grad, m, v, nullptr, adamw_step(params)};
  launch_elementwise<4>("adamw", "fp32", op, n, address_bits(param, grad, m, v), l);
}

void adamw_bf16(float* param, const std::uint16_t* grad, float* m, float* v,
                std::uint16_t* param_bf16, std::int64_t n, const AdamWParams& params,
                const Launch& l) {
  const auto* g = reinterpret_cast<const Bf16*>(grad);
  auto* p16 = reinterpret_cast<Bf16*>(param_bf16);
  const AdamWOp<Bf16> op{param, g, m, v, p16, adamw_step(params)};
  launch_elementwise<8>("adamw_bf16", "fp32 + bf16", op, n,
                        address_bits(param, grad, m, v, param_bf16), l);
}

void cast_to_bf16(const float* x, std::uint16_t* y, std::int64_t n, const Launch& l) {
  const CastOp<float, Bf16> op{x, reinterpret_cast<Bf16*>(y)};
  launch_elementwise<8>("cast_to_bf16", "fp32 -> bf16", op, n, address_bits(x, y), l);
}

void cast_to_fp32(const std::uint16_t* x, float* y, std::int64_t n, const Launch& l) {
  const CastOp<Bf16, float> op{reinterpret_cast<const Bf16*>(x), y};
  launch_elementwise<8>("cast_to_fp32", "bf16 -> fp32", op, n, address_bits(x, y), l);
}

void fp8_quantize(const std::uint16_t* x, const float* scale, std::uint8_t* y, float* amax,
                  std::int64_t n, const Launch& l) {
  OPBENCH_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), l.stream));
  if (n <= 0) return;
  constexpr int kV = 16;  // 16 e4m3 codes per 16-byte store, from two 16-byte loads of bf16
  const int vec = vector_elements(1, address_bits(x, y)) == 1 ? 1 : kV;
  const Grid g = elementwise_grid(n, vec, l.sm_count);
  const auto* xs = reinterpret_cast<const Bf16*>(x);
  auto* ys = reinterpret_cast<Fp8E4m3*>(y);
  auto* bits = reinterpret_cast<unsigned*>(amax);
  const cudaError_t pending = take_pending_cuda_error();
  if (vec == kV)
    fp8_quantize_kernel<kV><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(xs, scale, ys, bits, n);
  else
    fp8_quantize_kernel<1><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(xs, scale, ys, bits, n);
  check_launch(pending, "fp8_quantize_kernel");
  if (l.shape)
    describe(l, fmt::format("memset of amax, then fp8_quantize<bf16 -> e4m3> x{}: {} blocks x {} "
                            "threads (grid-stride, one pass: codes written, amax by a block "
                            "reduction and one atomicMax on its float bits per block{})",
                            vec, g.blocks, g.threads,
                            vec == 1 ? "; scalar: an operand is not 16-byte aligned" : ""));
}

void scale_elements(DType t, void* x, std::int64_t n, float factor, cudaStream_t stream) {
  with_storage(t, "scale_elements", [&](auto tag) {
    using S = decltype(tag);
    const ScaleOp<S> op{static_cast<S*>(x), factor};
    launch_elementwise<vec_of<S>()>("scale_elements", Codec<S>::kName, op, n, address_bits(x),
                                    Launch{stream, 128, nullptr});
  });
}

void derive_second_moment(const float* m, float* v, std::int64_t n, cudaStream_t stream) {
  launch_elementwise<4>("derive_second_moment", "fp32", SecondMomentOp{m, v}, n, address_bits(m, v),
                        Launch{stream, 128, nullptr});
}

void fill_indices(std::int64_t* ids, std::int64_t n, std::uint64_t seed, std::int64_t set,
                  std::int64_t range, cudaStream_t stream) {
  if (n <= 0) return;
  if (range < 1) throw run_failure("fill_indices: the range must be at least 1");
  const Grid g = elementwise_grid(n, 1, 128);
  const cudaError_t pending = take_pending_cuda_error();
  fill_indices_kernel<<<grid_of(g.blocks), g.threads, 0, stream>>>(ids, n, seed, set, range);
  check_launch(pending, "fill_indices_kernel");
}

}  // namespace opbench::cuda_memops
