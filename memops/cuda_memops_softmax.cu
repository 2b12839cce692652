// CUDA kernels of bench_memops: softmax forward and backward, and cross-entropy's loss and
// gradient in one kernel, one block per row (memops/cuda_memops.cuh).
#include "memops/cuda_memops_launch.cuh"

namespace opbench::cuda_memops {
namespace {

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

}  // namespace

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

}  // namespace opbench::cuda_memops
