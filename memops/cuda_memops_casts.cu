// CUDA kernels of bench_memops: the copies that change the number format, the casts between fp32
// and bf16 and the fp8 quantisation with its amax (memops/cuda_memops.cuh).
//
// Design (issue 41 item 2): grid-stride loops over 16-byte vectors, two a thread at a time (both
// loaded before either is converted), conversions by the hardware's cvt (bf16 pairs through
// cvt.rn.bf16x2.f32; e4m3 pairs through cvt.rn.satfinite.e4m3x2.f32 on sm_89 and later, where
// memop_math's encoder took about fifteen instructions an element: fp8 quantize reached 49% of
// the roof on an H200). Target: at least 85% of the same run's device-to-device copy rate on an
// H100 or H200. NOT YET RUN ON A GPU: compiled for sm_80, sm_90 and sm_100; the figures are
// pending a GPU run.
#include "memops/cuda_memops_launch.cuh"

namespace opbench::cuda_memops {
namespace {

template <class From, class To>
struct CastOp {
  const From* x;
  To* y;
  template <int V, int U>
  __device__ void apply(const std::int64_t (&at)[U]) const {
    float a[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u)
      load<V>(x, at[u], a[u]);
#pragma unroll
    for (int u = 0; u < U; ++u)
      store<V>(y, at[u], a[u]);
  }
};

// ---- fp8 quantize -----------------------------------------------------------------------------

// W elements loaded from i: their e4m3 codes written, and the largest |x| bits among them
// returned (non-negative floats order as their bit patterns do, so an unsigned max is the float
// max; NaN, above infinity, wins as in the CPU loop).
template <int W>
__device__ __forceinline__ unsigned quantize(float (&a)[W], float scale, Fp8E4m3* y,
                                             std::int64_t i) {
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

// One pass over x: each thread quantizes its vectors, two loaded at a time (as
// elementwise_kernel), and keeps its amax; the block reduces them, and one atomicMax per block
// on amax's bits (zeroed beforehand) gives the tensor's amax.
template <int V>
__global__ void __launch_bounds__(kElementwiseThreads)
    fp8_quantize_kernel(const Bf16* x, const float* scale, Fp8E4m3* y, unsigned* amax_bits,
                        std::int64_t n) {
  const float s = *scale;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t vectors = n / V;
  unsigned best = 0;
  auto keep = [&best](unsigned b) { best = b > best ? b : best; };
  std::int64_t k = first;
  for (; k + stride < vectors; k += 2 * stride) {
    float a[V], b[V];
    load<V>(x, k * V, a);
    load<V>(x, (k + stride) * V, b);
    keep(quantize<V>(a, s, y, k * V));
    keep(quantize<V>(b, s, y, (k + stride) * V));
  }
  for (; k < vectors; k += stride) {
    float a[V];
    load<V>(x, k * V, a);
    keep(quantize<V>(a, s, y, k * V));
  }
  if constexpr (V > 1) {
    const std::int64_t i = vectors * V + first;
    if (i < n) {
      float a[1];
      load<1>(x, i, a);
      keep(quantize<1>(a, s, y, i));
    }
  }
  best = block_all_reduce(best, MaxBits{}, 0u);
  if (threadIdx.x == 0 && best != 0) atomicMax(amax_bits, best);
}

}  // namespace

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
  const cudaError_t pending = take_pending_cuda_error();
  static const int resident_v = resident_blocks(fp8_quantize_kernel<kV>);
  static const int resident_1 = resident_blocks(fp8_quantize_kernel<1>);
  const Grid g = elementwise_grid(n, vec, l.sm_count, 2, vec == kV ? resident_v : resident_1);
  const auto* xs = reinterpret_cast<const Bf16*>(x);
  auto* ys = reinterpret_cast<Fp8E4m3*>(y);
  auto* bits = reinterpret_cast<unsigned*>(amax);
  if (vec == kV)
    fp8_quantize_kernel<kV><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(xs, scale, ys, bits, n);
  else
    fp8_quantize_kernel<1><<<grid_of(g.blocks), g.threads, 0, l.stream>>>(xs, scale, ys, bits, n);
  check_launch(pending, "fp8_quantize_kernel");
  if (l.shape)
    describe(l, fmt::format("memset of amax, then fp8_quantize<bf16 -> e4m3> x{}: {} blocks x {} "
                            "threads (grid-stride, two vectors a thread at a time, one pass: codes "
                            "written, amax by a block reduction and one atomicMax on its float "
                            "bits per block{})",
                            vec, g.blocks, g.threads,
                            vec == 1 ? "; scalar: an operand is not 16-byte aligned" : ""));
}

}  // namespace opbench::cuda_memops
