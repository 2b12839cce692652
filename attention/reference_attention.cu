#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "attention/reference_attention.hpp"
#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"

namespace opbench {
namespace {

constexpr int kThreads = 128;

__device__ float load(const __nv_bfloat16* p, std::int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ float load(const __half* p, std::int64_t i) {
  return __half2float(p[i]);
}
__device__ void store(__nv_bfloat16* p, std::int64_t i, float v) {
  p[i] = __float2bfloat16(v);
}
__device__ void store(__half* p, std::int64_t i, float v) {
  p[i] = __float2half(v);
}

// Keys query row i sees: all, or j <= i + (Skv - Sq) under the bottom-right causal mask.
__device__ std::int64_t visible_keys(const AttentionDims& d, std::int64_t i) {
  if (!d.causal) return d.skv;
  std::int64_t n = i + 1 + d.skv - d.sq;
  return n < 0 ? 0 : (n > d.skv ? d.skv : n);
}

// Element offsets in the (B, S, H, D) layout.
__device__ std::int64_t at(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t S,
                           std::int64_t H, std::int64_t D) {
  return ((b * S + s) * H + h) * D;
}

// The (batch, head, row) a thread owns, rows varying fastest (a warp shares its K/V rows);
// false for the threads past the end.
struct RowIndex {
  std::int64_t b, h, i;
};
__device__ bool thread_row(std::int64_t batch, std::int64_t heads, std::int64_t rows, RowIndex& r) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= batch * heads * rows) return false;
  r = {t / (rows * heads), (t / rows) % heads, t % rows};
  return true;
}

template <typename T>
__device__ float dot(const T* x, std::int64_t xo, const T* y, std::int64_t yo, std::int64_t n) {
  float acc = 0;
  for (std::int64_t e = 0; e < n; ++e)
    acc += load(x, xo + e) * load(y, yo + e);
  return acc;
}

// One thread per (b, h, i): two passes over the visible keys (max, then exp-sum and P·V).
template <typename T>
__global__ void forward_kernel(AttentionDims d, const T* q, const T* k, const T* v, float* o,
                               float* lse) {
  RowIndex r;
  if (!thread_row(d.b, d.hq, d.sq, r)) return;
  const std::int64_t b = r.b, h = r.h, i = r.i;
  const std::int64_t hk = h / (d.hq / d.hkv), visible = visible_keys(d, i);
  const std::int64_t qo = at(b, i, h, d.sq, d.hq, d.dqk), oo = at(b, i, h, d.sq, d.hq, d.dv);
  float m = -INFINITY;
  for (std::int64_t j = 0; j < visible; ++j)
    m = fmaxf(m, d.scale * dot(q, qo, k, at(b, j, hk, d.skv, d.hkv, d.dqk), d.dqk));
  for (std::int64_t e = 0; e < d.dv; ++e)
    o[oo + e] = 0;
  float sum = 0;
  for (std::int64_t j = 0; j < visible; ++j) {
    const float p = expf(d.scale * dot(q, qo, k, at(b, j, hk, d.skv, d.hkv, d.dqk), d.dqk) - m);
    sum += p;
    const std::int64_t vo = at(b, j, hk, d.skv, d.hkv, d.dv);
    for (std::int64_t e = 0; e < d.dv; ++e)
      o[oo + e] += p * load(v, vo + e);
  }
  if (visible > 0)
    for (std::int64_t e = 0; e < d.dv; ++e)
      o[oo + e] /= sum;
  lse[(b * d.hq + h) * d.sq + i] = visible > 0 ? m + logf(sum) : -INFINITY;
}

// P_ij and dS_ij·scale of one (query row i, key row j) pair, from the forward's lse_i and
// delta_i = dO_i·O_i: P = exp(scale·Q_i·K_j − lse_i), dS = P·(dO_i·V_j − delta_i).
struct ScoreGrad {
  float p, ds_scaled;
};
template <typename T>
__device__ ScoreGrad score_grad(const AttentionDims& d, const T* q, std::int64_t qo, const T* k,
                                std::int64_t ko, const T* v, std::int64_t vo, const T* dout,
                                std::int64_t oo, float lse, float delta) {
  const float p = expf(d.scale * dot(q, qo, k, ko, d.dqk) - lse);
  const float dp = dot(dout, oo, v, vo, d.dv);
  return {p, p * (dp - delta) * d.scale};
}

// One thread per (b, h, i): delta_i = dO_i·O_i, then dQ_i = Σ_j dS_ij·K_j·scale.
template <typename T>
__global__ void dq_kernel(AttentionDims d, const T* q, const T* k, const T* v, const T* o,
                          const float* lse, const T* dout, float* dq, float* delta) {
  RowIndex r;
  if (!thread_row(d.b, d.hq, d.sq, r)) return;
  const std::int64_t b = r.b, h = r.h, i = r.i;
  const std::int64_t hk = h / (d.hq / d.hkv), visible = visible_keys(d, i);
  const std::int64_t qo = at(b, i, h, d.sq, d.hq, d.dqk), oo = at(b, i, h, d.sq, d.hq, d.dv);
  const std::int64_t row = (b * d.hq + h) * d.sq + i;
  const float di = dot(dout, oo, o, oo, d.dv);
  delta[row] = di;
  for (std::int64_t e = 0; e < d.dqk; ++e)
    dq[qo + e] = 0;
  for (std::int64_t j = 0; j < visible; ++j) {
    const std::int64_t ko = at(b, j, hk, d.skv, d.hkv, d.dqk);
    const ScoreGrad g =
        score_grad(d, q, qo, k, ko, v, at(b, j, hk, d.skv, d.hkv, d.dv), dout, oo, lse[row], di);
    for (std::int64_t e = 0; e < d.dqk; ++e)
      dq[qo + e] += g.ds_scaled * load(k, ko + e);
  }
}

// One thread per (b, hk, j): dV_j = Σ P_ij·dO_i and dK_j = Σ dS_ij·Q_i·scale over the query rows
// that see key j, in every query head of the group.
template <typename T>
__global__ void dkv_kernel(AttentionDims d, const T* q, const T* k, const T* v, const float* lse,
                           const T* dout, const float* delta, float* dk, float* dv) {
  RowIndex r;
  if (!thread_row(d.b, d.hkv, d.skv, r)) return;
  const std::int64_t b = r.b, hk = r.h, j = r.i;
  const std::int64_t ko = at(b, j, hk, d.skv, d.hkv, d.dqk), vo = at(b, j, hk, d.skv, d.hkv, d.dv);
  for (std::int64_t e = 0; e < d.dqk; ++e)
    dk[ko + e] = 0;
  for (std::int64_t e = 0; e < d.dv; ++e)
    dv[vo + e] = 0;
  // Query row i sees key j when j < i + 1 + Skv - Sq, i.e. i >= j - (Skv - Sq).
  std::int64_t first = d.causal ? j - (d.skv - d.sq) : 0;
  if (first < 0) first = 0;
  const std::int64_t group = d.hq / d.hkv;
  for (std::int64_t g = 0; g < group; ++g) {
    const std::int64_t h = hk * group + g;
    for (std::int64_t i = first; i < d.sq; ++i) {
      const std::int64_t qo = at(b, i, h, d.sq, d.hq, d.dqk), oo = at(b, i, h, d.sq, d.hq, d.dv);
      const std::int64_t row = (b * d.hq + h) * d.sq + i;
      const ScoreGrad sg = score_grad(d, q, qo, k, ko, v, vo, dout, oo, lse[row], delta[row]);
      for (std::int64_t e = 0; e < d.dv; ++e)
        dv[vo + e] += sg.p * load(dout, oo + e);
      for (std::int64_t e = 0; e < d.dqk; ++e)
        dk[ko + e] += sg.ds_scaled * load(q, qo + e);
    }
  }
}

template <typename T>
__global__ void convert_kernel(const float* in, T* out, std::int64_t n) {
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store(out, e, in[e]);
}

// Non-negative floats order like their bit patterns, so atomicMax on the bits is a float max.
__device__ void atomic_max_nonneg(unsigned int* slot, float v) {
  atomicMax(slot, __float_as_uint(v));
}

template <typename T>
__global__ void compare_kernel(const T* got, const float* want, std::int64_t n,
                               unsigned int* max_err, unsigned int* max_ref) {
  float err = 0, ref = 0;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float diff = fabsf(load(got, e) - want[e]);
    err = fmaxf(err, isnan(diff) ? INFINITY : diff);
    ref = fmaxf(ref, fabsf(want[e]));
  }
  atomic_max_nonneg(max_err, err);
  atomic_max_nonneg(max_ref, ref);
}

unsigned int blocks_for(std::int64_t threads) {
  return static_cast<unsigned int>((threads + kThreads - 1) / kThreads);
}

// Runs `launch` with the input pointers cast to the element type of `t`.
template <typename Launch>
void with_type(DType t, Launch&& launch) {
  if (t == DType::bf16)
    launch(static_cast<const __nv_bfloat16*>(nullptr));
  else if (t == DType::fp16)
    launch(static_cast<const __half*>(nullptr));
  else
    throw std::logic_error("reference attention: bf16 and fp16 only");
}

}  // namespace

void reference_attention_forward(const AttentionDims& s, const void* q, const void* k,
                                 const void* v, float* o, float* lse, cudaStream_t stream) {
  with_type(s.dtype, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    forward_kernel<T><<<blocks_for(s.b * s.hq * s.sq), kThreads, 0, stream>>>(
        s, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), o, lse);
  });
  OPBENCH_CUDA_CHECK(cudaGetLastError());
}

void reference_attention_backward(const AttentionDims& s, const void* q, const void* k,
                                  const void* v, const void* o, const float* lse, const void* dout,
                                  float* dq, float* dk, float* dv, float* delta,
                                  cudaStream_t stream) {
  with_type(s.dtype, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    const T *tq = static_cast<const T*>(q), *tk = static_cast<const T*>(k),
            *tv = static_cast<const T*>(v), *to = static_cast<const T*>(o),
            *tdo = static_cast<const T*>(dout);
    dq_kernel<T><<<blocks_for(s.b * s.hq * s.sq), kThreads, 0, stream>>>(s, tq, tk, tv, to, lse,
                                                                         tdo, dq, delta);
    dkv_kernel<T><<<blocks_for(s.b * s.hkv * s.skv), kThreads, 0, stream>>>(s, tq, tk, tv, lse, tdo,
                                                                            delta, dk, dv);
  });
  OPBENCH_CUDA_CHECK(cudaGetLastError());
}

void convert_floats(const float* in, void* out, std::int64_t count, DType t, cudaStream_t stream) {
  with_type(t, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    convert_kernel<T><<<1024, 256, 0, stream>>>(in, static_cast<T*>(out), count);
  });
  OPBENCH_CUDA_CHECK(cudaGetLastError());
}

DeviceComparison compare_with_reference(const void* got, const float* want, std::int64_t count,
                                        DType t, cudaStream_t stream) {
  DeviceBuffer slots(2 * sizeof(unsigned int));
  auto* bits = static_cast<unsigned int*>(slots.data());
  OPBENCH_CUDA_CHECK(cudaMemsetAsync(bits, 0, 2 * sizeof(unsigned int), stream));
  with_type(t, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    compare_kernel<T>
        <<<1024, 256, 0, stream>>>(static_cast<const T*>(got), want, count, bits, bits + 1);
  });
  OPBENCH_CUDA_CHECK(cudaGetLastError());
  unsigned int host[2] = {0, 0};
  OPBENCH_CUDA_CHECK(cudaMemcpyAsync(host, bits, sizeof(host), cudaMemcpyDeviceToHost, stream));
  OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  float err = 0, ref = 0;
  std::memcpy(&err, &host[0], sizeof(float));
  std::memcpy(&ref, &host[1], sizeof(float));
  return {err, ref};
}

}  // namespace opbench
