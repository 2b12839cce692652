// CUDA kernels of bench_memops: the elementwise operators (memops/elementwise.hpp's kernels, one
// template over every storage type) and the untimed input preparation (scaling, AdamW's derived
// second moment, token ids). See memops/cuda_memops.cuh.
//
// Design (issue 41 item 2): a grid-stride loop over 16-byte vectors, two a thread at a time
// (elementwise_kernel: every operand of both loaded before either is computed), so each thread
// keeps 32 bytes of every operand in flight and an SM (8 blocks of 256 threads) 64 KB, twice
// what an H200 needs in flight to stream at 4.8 TB/s (about 800 ns of latency over 132 SMs).
// The activations take their sigmoid from the hardware's ex2.approx and rcp.approx (one MUFU.EX2
// and one MUFU.RCP an element, memops/fast_math.hpp, where exp_approx and an IEEE division took
// about 30 instructions) and store bf16 through cvt.rn.bf16x2.f32: silu (50% of the roof on an
// H200) and swiglu (65%) were issue-bound, not memory-bound. The check's bound for them is
// derived in fast_math.hpp and memop_check.hpp, and host-tested against the exact functions.
// Target: at least 85% of the same run's device-to-device copy rate on an H100 or H200, and never
// below PyTorch's own kernel for the operator. NOT YET RUN ON A GPU: compiled for sm_80, sm_90
// and sm_100 (ptxas, sm_90: at most 46 registers a thread, no spills); the figures are pending
// a GPU run.
#include "memops/cuda_memops_launch.cuh"
#include "memops/elementwise.hpp"
#include "memops/fast_math.hpp"

namespace opbench::cuda_memops {
namespace {

template <class S>
struct ScaleOp {
  S* x;
  float factor;
  template <int V, int U>
  __device__ void apply(const std::int64_t (&at)[U]) const {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float a[V];
      load<V>(x, at[u], a);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] *= factor;
      store<V>(x, at[u], a);
    }
  }
};

// The sigmoid of the kernels that take one: the hardware's ex2 and rcp (memops/fast_math.hpp).
using DeviceSigmoid = fast_math::FastSigmoid<fast_math::Hardware>;

// An elementwise operator's kernel F (memops/elementwise.hpp) over storage S: an in-place kernel
// reads and writes out[0], the other inputs come from in[]. Every operand of all U vectors is
// loaded before any is computed or stored.
template <class S, class F>
struct ElementwiseOp {
  const S* in[3];
  S* out[2];
  template <int V, int U>
  __device__ void apply(const std::int64_t (&at)[U]) const {
    constexpr int first = F::kInPlace ? 1 : 0;
    constexpr int reads = F::kIn - first;
    float x[U][F::kIn + 1][V];  // + 1: a fill reads nothing
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if constexpr (F::kInPlace) load<V>(out[0], at[u], x[u][0]);
#pragma unroll
      for (int k = 0; k < reads; ++k)
        load<V>(in[k], at[u], x[u][first + k]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float y[F::kOut][V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        float a[F::kIn + 1], b[F::kOut];
#pragma unroll
        for (int k = 0; k < F::kIn; ++k)
          a[k] = x[u][k][j];
        if constexpr (F::kAccuracy == elementwise::Accuracy::exponential)
          F{}.template operator()<DeviceSigmoid>(a, b);
        else
          F{}(a, b);
#pragma unroll
        for (int k = 0; k < F::kOut; ++k)
          y[k][j] = b[k];
      }
#pragma unroll
      for (int k = 0; k < F::kOut; ++k)
        store<V>(out[k], at[u], y[k]);
    }
  }
};

struct SecondMomentOp {
  const float* m;
  float* v;
  template <int V, int U>
  __device__ void apply(const std::int64_t (&at)[U]) const {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float a[V];
      load<V>(m, at[u], a);
#pragma unroll
      for (int j = 0; j < V; ++j)
        a[j] = memop_inputs::adamw_second_moment(a[j]);
      store<V>(v, at[u], a);
    }
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
    launch_elementwise<vec_of<S>(), 1>("scale_elements", Codec<S>::kName, op, n, address_bits(x),
                                       Launch{stream, 128, nullptr});
  });
}

void derive_second_moment(const float* m, float* v, std::int64_t n, cudaStream_t stream) {
  launch_elementwise<4, 1>("derive_second_moment", "fp32", SecondMomentOp{m, v}, n,
                           address_bits(m, v), Launch{stream, 128, nullptr});
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
