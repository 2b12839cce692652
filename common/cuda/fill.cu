// Deterministic uniform fill of device buffers in any benchmark dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/uniform_value.hpp"

namespace opbench {
namespace {

template <typename T, typename Convert>
__global__ void fill_kernel(T* out, std::size_t n, unsigned long long seed, Convert convert) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = convert(uniform_value(seed, i));  // element i depends on (seed, i) only
}

template <typename T, typename Convert>
void launch(void* data, std::size_t n, std::uint64_t seed, cudaStream_t stream, Convert convert) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  auto blocks = static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65536));
  const cudaError_t pending = take_pending_cuda_error();
  fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<T*>(data), n, seed, convert);
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "fill_kernel (uniform fill)");
}

}  // namespace

void fill_uniform(void* data, std::size_t n, DType t, std::uint64_t seed, cudaStream_t stream) {
  switch (t) {
    case DType::fp64:
      return launch<double>(data, n, seed, stream, [] __device__(float v) { return double(v); });
    case DType::fp32:
    case DType::tf32:
      return launch<float>(data, n, seed, stream, [] __device__(float v) { return v; });
    case DType::fp16:
      return launch<__half>(data, n, seed, stream,
                            [] __device__(float v) { return __float2half_rn(v); });
    case DType::bf16:
      return launch<__nv_bfloat16>(data, n, seed, stream,
                                   [] __device__(float v) { return __float2bfloat16_rn(v); });
    case DType::fp8_e4m3:
      return launch<__nv_fp8_e4m3>(data, n, seed, stream,
                                   [] __device__(float v) { return __nv_fp8_e4m3(v); });
    case DType::fp8_e5m2:
      return launch<__nv_fp8_e5m2>(data, n, seed, stream,
                                   [] __device__(float v) { return __nv_fp8_e5m2(v); });
    case DType::int8:
      return launch<signed char>(data, n, seed, stream, [] __device__(float v) {
        return static_cast<signed char>(v * 127.0f);
      });
    case DType::uint8:
      return launch<unsigned char>(data, n, seed, stream, [] __device__(float v) {
        return static_cast<unsigned char>((v + 1.0f) * 127.0f);
      });
    case DType::int32:
      return launch<int>(data, n, seed, stream,
                         [] __device__(float v) { return static_cast<int>(v * 1000.0f); });
    case DType::int64:
      return launch<long long>(data, n, seed, stream, [] __device__(float v) {
        return static_cast<long long>(v * 1000.0f);
      });
    case DType::uint32:
      return launch<unsigned int>(data, n, seed, stream, [] __device__(float v) {
        return static_cast<unsigned int>((v + 1.0f) * 1000.0f);
      });
    case DType::uint64:
      return launch<unsigned long long>(data, n, seed, stream, [] __device__(float v) {
        return static_cast<unsigned long long>((v + 1.0f) * 1000.0f);
      });
  }
}

}  // namespace opbench
