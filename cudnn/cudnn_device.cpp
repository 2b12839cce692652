#include "cudnn/cudnn_device.hpp"

#include "common/cuda/check.hpp"
#include "common/version.hpp"
#include "cudnn/cudnn_backend.hpp"

namespace opbench {

CudnnDevice::CudnnDevice(int device) : info_(cuda_device_info(device)) {
  OPBENCH_CUDA_CHECK(cudaSetDevice(device));
  cudnn_check(cudnnCreate(&handle_), "cudnnCreate");
  OPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  cudnn_check(cudnnSetStream(handle_, stream_), "cudnnSetStream");
}

CudnnDevice::~CudnnDevice() {
  if (handle_) cudnnDestroy(handle_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudnnDevice::describe(Environment& env) const {
  add_cuda_environment(env, info_.index);
  env.add_library("cuDNN", version_from_int(static_cast<long long>(cudnnGetVersion())));
}

void CudnnDevice::execute(const BackendDescriptor& plan, const BackendDescriptor& pack) const {
  cudnn_check(cudnnBackendExecute(handle_, plan.get(), pack.get()), "cudnnBackendExecute");
}

}  // namespace opbench
