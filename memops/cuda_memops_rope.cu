// CUDA kernels of bench_memops: the rotary embedding of q and k, one block per token
// (memops/cuda_memops.cuh).
//
// Design: a thread per (head, 16-byte vector of pairs), the pair's halves and the token's cos and
// sin loaded as vectors, bf16 stored through the hardware's cvt.rn.bf16x2.f32
// (cuda_memops_launch.cuh). Issue 41 did not measure it short; its target is the others': at
// least 85% of the same run's device-to-device copy rate on an H100 or H200. The hardware bf16
// store has NOT YET RUN ON A GPU (the kernel ran once on an H200 with the software encode).
#include "memops/cuda_memops_launch.cuh"

namespace opbench::cuda_memops {
namespace {

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

}  // namespace

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

}  // namespace opbench::cuda_memops
