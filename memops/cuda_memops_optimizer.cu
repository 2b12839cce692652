// CUDA kernels of bench_memops: one AdamW step, fp32 and mixed precision (memops/cuda_memops.cuh).
//
// Design: the grid-stride elementwise kernel (cuda_memops_launch.cuh), two 16-byte vectors of
// each of p, g, m and v loaded a thread at a time before any is updated. Target: at least 85% of
// the same run's device-to-device copy rate on an H100 or H200, and never below torch.optim.AdamW
// with fused=True. NOT YET RUN ON A GPU in this form: compiled for sm_80, sm_90 and sm_100; the
// figures are pending a GPU run.
#include "memops/cuda_memops_launch.cuh"

namespace opbench::cuda_memops {
namespace {

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
  template <int V, int U>
  __device__ void apply(const std::int64_t (&at)[U]) const {
    float pp[U][V], gg[U][V], mm[U][V], vv[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      load<V>(p, at[u], pp[u]);
      load<V>(g, at[u], gg[u]);
      load<V>(m, at[u], mm[u]);
      load<V>(v, at[u], vv[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const AdamWState s = adamw_update({pp[u][j], mm[u][j], vv[u][j]}, gg[u][j], step);
        pp[u][j] = s.param;
        mm[u][j] = s.m;
        vv[u][j] = s.v;
      }
      store<V>(p, at[u], pp[u]);
      store<V>(m, at[u], mm[u]);
      store<V>(v, at[u], vv[u]);
      if constexpr (std::is_same_v<G, Bf16>) store<V>(p16, at[u], pp[u]);
    }
  }
};

}  // namespace

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

}  // namespace opbench::cuda_memops
