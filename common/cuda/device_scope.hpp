#pragma once
// Makes a GPU current for a scope and the one that was current again on leaving.
#include <cuda_runtime_api.h>

#include <new>

#include "common/cuda/check.hpp"

namespace opbench {

class DeviceScope {
 public:
  // Throws run_failure when the device cannot be made current.
  explicit DeviceScope(int device) {
    OPBENCH_CUDA_CHECK(cudaGetDevice(&previous_));
    OPBENCH_CUDA_CHECK(cudaSetDevice(device));
    entered_ = true;
  }
  // For destructors and other cleanup, which must not throw (an exception escaping a destructor
  // during unwinding calls std::terminate and hides the error being unwound): when the device
  // cannot be made current the scope does nothing, and the error is cleared — the cleanup goes
  // on regardless, and the next launch must not be blamed for it.
  DeviceScope(int device, std::nothrow_t) noexcept {
    if (cudaGetDevice(&previous_) == cudaSuccess && cudaSetDevice(device) == cudaSuccess)
      entered_ = true;
    else
      take_pending_cuda_error();
  }
  ~DeviceScope() {
    if (entered_ && cudaSetDevice(previous_) != cudaSuccess) take_pending_cuda_error();
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  bool entered() const { return entered_; }

 private:
  int previous_ = 0;
  bool entered_ = false;
};

}  // namespace opbench
