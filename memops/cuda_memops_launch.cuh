#pragma once
// What every kernel family of bench_memops's CUDA kernels shares (memops/cuda_memops_*.cu): the
// storage types and their 16-byte loads and stores, the warp and block reductions, the
// grid-stride elementwise kernel, and the one launcher (with_storage, launch_elementwise,
// launch_rows). Included by those files alone; the interface is memops/cuda_memops.cuh.
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
#include "memops/memop_math.hpp"

namespace opbench::cuda_memops {
namespace {

using namespace memop_math;

// ---- storage types ----------------------------------------------------------------------------

// Device memory holds fp32, bf16 and fp16 activations (and e4m3 codes); kernels compute in fp32.
// bf16 and fp16 convert with the hardware's cvt.rn (PTX ISA, "cvt": round to nearest even, as
// memop_math::bf16_encode and the host's float_to_fp16 that the CPU loops and the check use, so
// both round alike to the bit; a NaN comes out as the canonical NaN), two at a time where a
// 16-byte store packs pairs (cvt.rn.bf16x2.f32 and cvt.rn.f16x2.f32, sm_80 and later: "the value
// converted from input a is stored in the upper half of d and the value converted from input b
// in the lower half"). memop_math's software encoder took about ten instructions an element.
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
  __device__ static Bits encode(float f) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
  // lo in the low half (the element at the lower address), hi in the high half.
  __device__ static std::uint32_t encode2(float lo, float hi) {
    std::uint32_t w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
  }
};

template <>
struct Codec<Fp16> {
  using Bits = std::uint16_t;
  static constexpr const char* kName = "fp16";
  __device__ static float decode(Bits b) { return __half2float(__ushort_as_half(b)); }
  __device__ static Bits encode(float f) { return __half_as_ushort(__float2half_rn(f)); }
  __device__ static std::uint32_t encode2(float lo, float hi) {
    std::uint32_t w;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
  }
};

// e4m3 (written only): on sm_89 and later the hardware's cvt.rn.satfinite.e4m3x2.f32 (PTX ISA,
// "cvt": round to nearest even, a magnitude beyond 448 saturating to 448, NaN to NaN), two at a
// time; before, memop_math's encoder, which rounds and saturates alike (CUDA's own cuda_fp8.hpp
// takes the same instruction for __NV_SATFINITE on sm_89, its software conversion elsewhere).
template <>
struct Codec<Fp8E4m3> {
  using Bits = std::uint8_t;
  __device__ static Bits encode(float f) { return fp8_e4m3_encode(f); }
  // lo in the low byte, hi in the high byte.
  __device__ static std::uint32_t encode2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned short pair;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(hi), "f"(lo));
    return pair;
#else
    return fp8_e4m3_encode(lo) | static_cast<std::uint32_t>(fp8_e4m3_encode(hi)) << 8;
#endif
  }
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

// One 16-byte vector of p at element i as it is in memory (vec_of<S>() elements; p + i 16-byte
// aligned), for a kernel that loads ahead and decodes when it uses the values (decode).
template <class S>
__device__ __forceinline__ uint4 load_raw(const S* p, std::int64_t i) {
  return *reinterpret_cast<const uint4*>(reinterpret_cast<const typename Codec<S>::Bits*>(p) + i);
}

// A vector load_raw took, as its V floats (V x sizeof(S) = 16).
template <int V, class S>
__device__ __forceinline__ void decode(uint4 w, float (&out)[V]) {
  using C = Codec<S>;
  using Bits = typename C::Bits;
  static_assert(V * sizeof(Bits) == kVectorBytes, "one 16-byte vector");
  constexpr int kPerWord = 4 / sizeof(Bits);
  const std::uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int e = 0; e < kPerWord; ++e)
      out[j * kPerWord + e] = C::decode(static_cast<Bits>(words[j] >> (8 * sizeof(Bits) * e)));
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
        const int e0 = (k * 4 + j) * kPerWord;
        if constexpr (kPerWord == 2) {
          words[j] = C::encode2(in[e0], in[e0 + 1]);
        } else if constexpr (kPerWord == 4) {
          words[j] = C::encode2(in[e0], in[e0 + 1]) | C::encode2(in[e0 + 2], in[e0 + 3]) << 16;
        } else {
          std::uint32_t word = 0;
#pragma unroll
          for (int e = 0; e < kPerWord; ++e)
            word |= static_cast<std::uint32_t>(C::encode(in[e0 + e])) << (8 * sizeof(Bits) * e);
          words[j] = word;
        }
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

// Grid-stride over n elements in vectors of V, U vectors a thread at a time (`stride` apart, so
// that each warp's accesses stay coalesced): Op::apply<V, U> loads all of them before it computes
// and stores any, keeping U x 16 bytes of each operand in flight per thread. Then what is left of
// the thread's vectors one at a time, and the tail (n % V elements) element by element by the
// first threads.
template <int V, int U, class Op>
__global__ void __launch_bounds__(kElementwiseThreads) elementwise_kernel(Op op, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t vectors = n / V;
  std::int64_t k = first;
  if constexpr (U > 1)
    for (; k + (U - 1) * stride < vectors; k += U * stride) {
      std::int64_t at[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        at[u] = (k + u * stride) * V;
      op.template apply<V, U>(at);
    }
  for (; k < vectors; k += stride) {
    const std::int64_t at[1] = {k * V};
    op.template apply<V, 1>(at);
  }
  if constexpr (V > 1) {
    const std::int64_t i = vectors * V + first;
    if (i < n) {
      const std::int64_t at[1] = {i};
      op.template apply<1, 1>(at);
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

// Blocks of `threads` (with `shared` bytes of dynamic shared memory) that an SM holds at once
// running `kernel` (the occupancy calculator: CUDA Runtime API,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor); -1 where the runtime cannot say.
template <class Kernel>
int blocks_per_sm(Kernel kernel, int threads, std::size_t shared = 0) {
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared) !=
      cudaSuccess) {
    cudaGetLastError();  // the query's own failure, taken so it is not reported as a launch's
    return -1;
  }
  return blocks;
}

// Blocks of kElementwiseThreads that an SM holds at once running `kernel` (its registers decide:
// AdamW with a bf16 gradient takes 80 a thread, 3 blocks); kElementwiseBlocksPerSm where the
// runtime cannot say.
template <class Kernel>
int resident_blocks(Kernel kernel) {
  const int blocks = blocks_per_sm(kernel, kElementwiseThreads);
  return blocks < 0 ? kElementwiseBlocksPerSm : blocks;
}

// An elementwise operator: vectors of V elements when every operand is 16-byte aligned, U of
// them a thread at a time (kElementwiseUnroll for the operators; 1 for the untimed preparation).
template <int V, int U = kElementwiseUnroll, class Op>
void launch_elementwise(const char* kernel, const char* type, const Op& op, std::int64_t n,
                        std::uintptr_t addresses, const Launch& l) {
  if (n <= 0) return;
  const int vec = vector_elements(kVectorBytes / V, addresses) == 1 ? 1 : V;
  const cudaError_t pending = take_pending_cuda_error();
  // Asked once per kernel (the runtime's occupancy calculator, from its registers).
  static const int resident_v = resident_blocks(elementwise_kernel<V, U, Op>);
  static const int resident_1 = resident_blocks(elementwise_kernel<1, U, Op>);
  const Grid g = elementwise_grid(n, vec, l.sm_count, U, vec == V ? resident_v : resident_1);
  if (vec == V)
    elementwise_kernel<V, U><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(op, n);
  else
    elementwise_kernel<1, U><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(op, n);
  check_launch(pending, kernel);
  if (l.shape)
    describe(l, fmt::format("{}<{}> x{}: {} blocks x {} threads (grid-stride, {} vector{} a thread "
                            "at a time{})",
                            kernel, type, vec, g.blocks, g.threads, U, U == 1 ? "" : "s",
                            vec == 1 ? ", scalar: an operand is not 16-byte aligned"
                                     : ", 16-byte vectors"));
}

template <class S>
__host__ __device__ constexpr int vec_of() {
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

}  // namespace opbench::cuda_memops
