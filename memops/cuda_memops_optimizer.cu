// CUDA kernels of bench_memops: one AdamW step, fp32 and mixed precision (memops/cuda_memops.cuh).
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
