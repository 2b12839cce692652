// Device side of the collective check: the same pattern functions as the host, compiled for the
// GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "collectives/nccl_pattern.hpp"
#include "collectives/pattern_element.hpp"
#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"

namespace opbench {
namespace {

template <typename T>
__global__ void fill_kernel(T* data, long long n, long long offset, PatternSpec spec, int rank) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    data[offset + i] = pattern_from_double<T>(pattern_input(spec, rank, i));
}

template <typename T>
__global__ void poison_kernel(T* data, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    data[i] = pattern_from_double<T>(kPatternPoison);
}

template <typename T>
__global__ void count_kernel(const T* data, long long n, CollOp op, PatternSpec spec, int rank,
                             int root, long long count, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<long long>(gridDim.x) * blockDim.x)
    if (!pattern_matches(spec, pattern_to_double(data[j]),
                         pattern_expected(op, spec, rank, root, count, j)))
      ++mine;
  if (mine) atomicAdd(wrong, mine);
}

int blocks_for(long long n) {
  return static_cast<int>(std::min<long long>(std::max<long long>((n + 255) / 256, 1), 4096));
}

// Calls f with a null pointer of the element type of t.
template <typename F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::fp64:
      return f(static_cast<double*>(nullptr));
    case DType::fp32:
      return f(static_cast<float*>(nullptr));
    case DType::fp16:
      return f(static_cast<__half*>(nullptr));
    case DType::bf16:
      return f(static_cast<__nv_bfloat16*>(nullptr));
    case DType::fp8_e4m3:
      return f(static_cast<__nv_fp8_e4m3*>(nullptr));
    case DType::fp8_e5m2:
      return f(static_cast<__nv_fp8_e5m2*>(nullptr));
    case DType::int8:
      return f(static_cast<signed char*>(nullptr));
    case DType::uint8:
      return f(static_cast<unsigned char*>(nullptr));
    case DType::int32:
      return f(static_cast<int*>(nullptr));
    case DType::int64:
      return f(static_cast<long long*>(nullptr));
    case DType::uint32:
      return f(static_cast<unsigned int*>(nullptr));
    case DType::uint64:
      return f(static_cast<unsigned long long*>(nullptr));
    default:
      throw std::logic_error("no device pattern for this dtype");
  }
}

}  // namespace

void device_pattern_fill(void* data, DType t, std::int64_t n, std::int64_t offset,
                         const PatternSpec& spec, int rank, cudaStream_t stream) {
  if (n <= 0) return;
  const cudaError_t pending = take_pending_cuda_error();
  with_type(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    fill_kernel<T><<<blocks_for(n), 256, 0, stream>>>(static_cast<T*>(data), n, offset, spec, rank);
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "fill_kernel (collective check pattern)");
}

void device_pattern_poison(void* data, DType t, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const cudaError_t pending = take_pending_cuda_error();
  with_type(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    poison_kernel<T><<<blocks_for(n), 256, 0, stream>>>(static_cast<T*>(data), n);
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "poison_kernel (collective check pattern)");
}

std::int64_t device_pattern_count_wrong(const void* data, DType t, std::int64_t n, CollOp op,
                                        const PatternSpec& spec, int rank, int root,
                                        std::int64_t count, cudaStream_t stream) {
  if (n <= 0) return 0;
  DeviceBuffer counter(sizeof(unsigned long long));
  OPBENCH_CUDA_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned long long), stream));
  const cudaError_t pending = take_pending_cuda_error();
  with_type(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    count_kernel<T><<<blocks_for(n), 256, 0, stream>>>(
        static_cast<const T*>(data), n, op, spec, rank, root, count,
        static_cast<unsigned long long*>(counter.data()));
  });
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "count_kernel (collective check)");
  unsigned long long wrong = 0;
  OPBENCH_CUDA_CHECK(
      cudaMemcpyAsync(&wrong, counter.data(), sizeof(wrong), cudaMemcpyDeviceToHost, stream));
  OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<std::int64_t>(wrong);
}

}  // namespace opbench
