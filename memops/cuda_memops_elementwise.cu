// CUDA kernels of bench_memops: the elementwise operators (memops/elementwise.hpp's kernels, one
// template over every storage type) and the untimed input preparation (scaling, AdamW's derived
// second moment, token ids). See memops/cuda_memops.cuh.
#include "memops/cuda_memops_launch.cuh"
#include "memops/elementwise.hpp"

namespace opbench::cuda_memops {
namespace {

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
