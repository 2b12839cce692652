#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/clock_probe.hpp"

namespace opbench {
namespace {

constexpr long long kSpinCycles = 1'000'000;  // ~0.5 ms at 2 GHz: the timer's ~32 ns step is 0.01%

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(long long cycles, long long* out) {
  const std::uint64_t t0 = global_timer_ns();
  const long long c0 = clock64();
  long long c = c0;
  while (c - c0 < cycles)
    c = clock64();
  const std::uint64_t t1 = global_timer_ns();
  out[0] = c - c0;
  out[1] = static_cast<long long>(t1 - t0);
}

}  // namespace

double probe_sm_clock_mhz(cudaStream_t stream) {
  DeviceBuffer slots(2 * sizeof(long long));
  const cudaError_t pending = take_pending_cuda_error();
  spin_kernel<<<1, 1, 0, stream>>>(kSpinCycles, static_cast<long long*>(slots.data()));
  OPBENCH_CUDA_CHECK_LAUNCH(pending, "spin_kernel (SM clock probe)");
  long long host[2] = {0, 0};
  OPBENCH_CUDA_CHECK(
      cudaMemcpyAsync(host, slots.data(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host[1] <= 0) return 0;
  return static_cast<double>(host[0]) / static_cast<double>(host[1]) * 1e3;  // cycles/ns → MHz
}

}  // namespace opbench
