#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/stream_blocker.hpp"

namespace opbench {
namespace {

__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_until_released(volatile int* flags, unsigned long long timeout_ns) {
  const std::uint64_t start = now_ns();
  while (flags[0] == 0) {
    if (now_ns() - start > timeout_ns) {
      flags[1] = 1;
      return;
    }
  }
}

}  // namespace

StreamBlocker::StreamBlocker(double timeout_s)
    : timeout_ns_(static_cast<unsigned long long>(timeout_s * 1e9)) {}

// The flags are allocated at the first block(), on the device the caller has made current (a
// provider's members are built before its constructor selects its GPU), pinned for every context.
void StreamBlocker::allocate() {
  void* host = nullptr;
  OPBENCH_CUDA_CHECK(
      cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  host_flags_ = static_cast<volatile int*>(host);
  host_flags_[0] = 1;
  host_flags_[1] = 0;
  void* device = nullptr;
  OPBENCH_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
  device_flags_ = static_cast<int*>(device);
}

StreamBlocker::~StreamBlocker() {
  if (host_flags_) {
    host_flags_[0] = 1;  // never leave a kernel spinning behind us
    cudaFreeHost(const_cast<int*>(host_flags_));
  }
}

void StreamBlocker::block(cudaStream_t stream) {
  if (!host_flags_) allocate();
  host_flags_[0] = 0;
  host_flags_[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const cudaError_t pending = take_pending_cuda_error();
  spin_until_released<<<1, 1, 0, stream>>>(device_flags_, timeout_ns_);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    host_flags_[0] = 1;
    throw run_failure(
        launch_failure_text(err, pending, "spin_until_released<<<1, 1>>>", __FILE__, __LINE__));
  }
}

void StreamBlocker::release() {
  if (!host_flags_) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  host_flags_[0] = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool StreamBlocker::timed_out() const {
  return host_flags_ && host_flags_[1] != 0;
}

double blocked_sample_us(cudaStream_t stream, StreamBlocker& blocker, CudaEventTimer& timer,
                         const std::function<void()>& enqueue) {
  blocker.block(stream);
  try {
    timer.start(stream);
    enqueue();
    timer.stop(stream);
  } catch (...) {
    blocker.release();
    throw;
  }
  blocker.release();
  const double us = timer.elapsed_us();
  if (blocker.timed_out())
    throw run_failure(
        "the stream-blocking kernel timed out before the sample's work was queued (the host "
        "blocked while launching): this sample would include host time");
  return us;
}

double GpuSampler::sample_us(cudaStream_t stream, CudaEventTimer& timer,
                             const std::function<void()>& enqueue) {
  if (!unblocked_) {
    try {
      return blocked_sample_us(stream, blocker_, timer, enqueue);
    } catch (const Error&) {
      if (!blocker_.timed_out()) throw;
      unblocked_ = true;
    }
  }
  return unblocked_sample_us(stream, timer, enqueue);
}

double GpuSampler::unblocked_sample_us(cudaStream_t stream, CudaEventTimer& timer,
                                       const std::function<void()>& enqueue) {
  timer.start(stream);
  enqueue();
  timer.stop(stream);
  return timer.elapsed_us();
}

const char* GpuSampler::fallback_note() {
  return "samples not stream-blocked: the library waited on the host while the stream was held, "
         "so each sample includes its launch";
}

}  // namespace opbench
