#pragma once
// What a provider of cuDNN graphs holds for its GPU, written once for every family (attention's
// SDPA, memops' norms): the device, a cuDNN handle bound to a non-blocking stream of its own, and
// the run's environment lines (the GPU, the cuDNN it loaded).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "common/cuda/device.hpp"
#include "common/env.hpp"
#include "cudnn/cudnn_backend.hpp"

namespace opbench {

class CudnnDevice {
 public:
  // Makes `device` current, creates the handle and the stream, and binds them.
  explicit CudnnDevice(int device);
  ~CudnnDevice();
  CudnnDevice(const CudnnDevice&) = delete;
  CudnnDevice& operator=(const CudnnDevice&) = delete;

  cudnnHandle_t handle() const { return handle_; }
  cudaStream_t stream() const { return stream_; }
  const CudaDeviceInfo& info() const { return info_; }
  // The GPU's lines and cuDNN's loaded version, for a provider's describe().
  void describe(Environment& env) const;
  // Enqueues an execution plan with its variant pack on the stream.
  void execute(const BackendDescriptor& plan, const BackendDescriptor& pack) const;

 private:
  CudaDeviceInfo info_;
  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace opbench
