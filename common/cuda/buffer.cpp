#include "common/cuda/buffer.hpp"

#include <fmt/format.h>

#include <utility>

#include "common/cuda/check.hpp"

namespace opbench {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  cudaError_t err = cudaMalloc(&ptr_, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw run_failure(
        fmt::format("cudaMalloc of {} bytes failed: {}", bytes, cudaGetErrorString(err)));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

std::vector<unsigned char> DeviceBuffer::to_host(std::size_t offset, std::size_t bytes) const {
  std::vector<unsigned char> host(bytes);
  OPBENCH_CUDA_CHECK(cudaMemcpy(host.data(), static_cast<const unsigned char*>(ptr_) + offset,
                                bytes, cudaMemcpyDeviceToHost));
  return host;
}

L2Flusher::L2Flusher(std::size_t l2_bytes) : scratch_(2 * l2_bytes) {}

void L2Flusher::flush(cudaStream_t stream) {
  if (scratch_.bytes())
    OPBENCH_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0, scratch_.bytes(), stream));
}

CudaEventTimer::CudaEventTimer() {
  OPBENCH_CUDA_CHECK(cudaEventCreate(&start_));
  OPBENCH_CUDA_CHECK(cudaEventCreate(&stop_));
}

CudaEventTimer::~CudaEventTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void CudaEventTimer::start(cudaStream_t stream) {
  OPBENCH_CUDA_CHECK(cudaEventRecord(start_, stream));
}
void CudaEventTimer::stop(cudaStream_t stream) {
  OPBENCH_CUDA_CHECK(cudaEventRecord(stop_, stream));
}

double CudaEventTimer::elapsed_us() {
  OPBENCH_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  OPBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1000.0;
}

}  // namespace opbench
