#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "attention/reference_attention.hpp"
#include "attention/reference_attention_rows.hpp"
#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"

namespace opbench {
namespace {

constexpr int kThreads = 128;  // four warps per block, one row each

using reference_rows::kWarp;

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

// An input read as float, for the row functions.
template <typename T>
struct Loader {
  const T* p;
  __device__ float operator()(std::int64_t i) const { return load(p, i); }
};

// The warp of the row functions on the GPU: each lane holds every 32nd element of a row's
// accumulators (kMaxHeadDim / 32 registers), and sums go across the lanes by shuffles.
struct DeviceWarp {
  static constexpr int kSlots = reference_rows::kMaxHeadDim / kWarp;
  int lane;
  template <class F>
  __device__ float sum(F f) const {
    float v = f(lane);
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
      v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
  }
  template <class F>
  __device__ void each(std::int64_t n, F f) const {
    int slot = 0;
    for (std::int64_t e = lane; e < n; e += kWarp, ++slot)
      f(slot, e);
  }
  __device__ bool leader() const { return lane == 0; }
};

// The row this thread's warp owns, or -1 past the end (a whole warp returns together, so the
// shuffles of the others always see 32 lanes).
__device__ std::int64_t warp_row(std::int64_t rows) {
  const std::int64_t row =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  return row < rows ? row : -1;
}

template <typename T>
__global__ void forward_kernel(AttentionDims d, const T* q, const T* k, const T* v, float* o,
                               float* lse) {
  const std::int64_t row = warp_row(d.b * d.hq * d.sq);
  if (row < 0) return;
  reference_rows::forward_row(d, row, DeviceWarp{static_cast<int>(threadIdx.x % kWarp)},
                              Loader<T>{q}, Loader<T>{k}, Loader<T>{v}, o, lse);
}

template <typename T>
__global__ void dq_kernel(AttentionDims d, const T* q, const T* k, const T* v, const T* o,
                          const float* lse, const T* dout, float* dq, float* delta) {
  const std::int64_t row = warp_row(d.b * d.hq * d.sq);
  if (row < 0) return;
  reference_rows::dq_row(d, row, DeviceWarp{static_cast<int>(threadIdx.x % kWarp)}, Loader<T>{q},
                         Loader<T>{k}, Loader<T>{v}, Loader<T>{o}, Loader<T>{dout}, lse, dq, delta);
}

template <typename T>
__global__ void dkv_kernel(AttentionDims d, const T* q, const T* k, const T* v, const float* lse,
                           const T* dout, const float* delta, float* dk, float* dv) {
  const std::int64_t row = warp_row(d.b * d.hkv * d.skv);
  if (row < 0) return;
  reference_rows::dkv_row(d, row, DeviceWarp{static_cast<int>(threadIdx.x % kWarp)}, Loader<T>{q},
                          Loader<T>{k}, Loader<T>{v}, Loader<T>{dout}, lse, delta, dk, dv);
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
    err = fmaxf(err, reference_rows::check_error(load(got, e), want[e]));
    ref = fmaxf(ref, fabsf(want[e]));
  }
  atomic_max_nonneg(max_err, err);
  atomic_max_nonneg(max_ref, ref);
}

unsigned int blocks_for_rows(std::int64_t rows) {
  return static_cast<unsigned int>((rows * kWarp + kThreads - 1) / kThreads);
}

void check_head_dims(const AttentionDims& d) {
  if (d.dqk > reference_rows::kMaxHeadDim || d.dv > reference_rows::kMaxHeadDim)
    throw run_failure(
        fmt::format("the CUDA reference attention handles head dims up to {}; this "
                    "case has {} / {}",
                    reference_rows::kMaxHeadDim, d.dqk, d.dv));
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
  check_head_dims(s);
  const cudaError_t pending = take_pending_cuda_error();
  with_type(s.dtype, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    forward_kernel<T><<<blocks_for_rows(s.b * s.hq * s.sq), kThreads, 0, stream>>>(
        s, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), o, lse);
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "forward_kernel (reference attention)");
}

void reference_attention_backward(const AttentionDims& s, const void* q, const void* k,
                                  const void* v, const void* o, const float* lse, const void* dout,
                                  float* dq, float* dk, float* dv, float* delta,
                                  cudaStream_t stream) {
  check_head_dims(s);
  const cudaError_t pending = take_pending_cuda_error();
  with_type(s.dtype, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    const T *tq = static_cast<const T*>(q), *tk = static_cast<const T*>(k),
            *tv = static_cast<const T*>(v), *to = static_cast<const T*>(o),
            *tdo = static_cast<const T*>(dout);
    dq_kernel<T><<<blocks_for_rows(s.b * s.hq * s.sq), kThreads, 0, stream>>>(s, tq, tk, tv, to,
                                                                              lse, tdo, dq, delta);
    dkv_kernel<T><<<blocks_for_rows(s.b * s.hkv * s.skv), kThreads, 0, stream>>>(
        s, tq, tk, tv, lse, tdo, delta, dk, dv);
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "dq_kernel, dkv_kernel (reference attention)");
}

void convert_floats(const float* in, void* out, std::int64_t count, DType t, cudaStream_t stream) {
  const cudaError_t pending = take_pending_cuda_error();
  with_type(t, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    convert_kernel<T><<<1024, 256, 0, stream>>>(in, static_cast<T*>(out), count);
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "convert_kernel");
}

DeviceComparison compare_with_reference(const void* got, const float* want, std::int64_t count,
                                        DType t, cudaStream_t stream) {
  DeviceBuffer slots(2 * sizeof(unsigned int));
  auto* bits = static_cast<unsigned int*>(slots.data());
  OPBENCH_CUDA_CHECK(cudaMemsetAsync(bits, 0, 2 * sizeof(unsigned int), stream));
  const cudaError_t pending = take_pending_cuda_error();
  with_type(t, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    compare_kernel<T>
        <<<1024, 256, 0, stream>>>(static_cast<const T*>(got), want, count, bits, bits + 1);
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "compare_kernel");
  unsigned int host[2] = {0, 0};
  OPBENCH_CUDA_CHECK(cudaMemcpyAsync(host, bits, sizeof(host), cudaMemcpyDeviceToHost, stream));
  OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  float err = 0, ref = 0;
  std::memcpy(&err, &host[0], sizeof(float));
  std::memcpy(&ref, &host[1], sizeof(float));
  return {err, ref};
}

}  // namespace opbench
