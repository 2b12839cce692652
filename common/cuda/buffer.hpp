#pragma once
// Device memory, owned (freed on destruction), and the few operations benchmarks need on it.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.hpp"

namespace opbench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  std::vector<unsigned char> to_host(std::size_t offset, std::size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Fills `count` elements of type `t` with values uniform in [-1, 1), deterministic in `seed`
// and the element index (so a host check can be reproduced), rounded to the type.
void fill_uniform(void* data, std::size_t count, DType t, std::uint64_t seed, cudaStream_t stream);

// Evicts the L2 cache by writing a buffer twice its size (outside any timed region).
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer scratch_;
};

// Times GPU work on one stream with CUDA events.
class CudaEventTimer {
 public:
  CudaEventTimer();
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;
  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  // Waits for the stop event and returns the time between the events in microseconds.
  double elapsed_us();

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace opbench
