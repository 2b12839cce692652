#pragma once
// Turns a failed CUDA runtime call into an opbench run_failure naming the call and where it was.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "common/error.hpp"

namespace opbench {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  throw run_failure(fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(err),
                                cudaGetErrorString(err), call, file, line));
}

}  // namespace opbench

#define OPBENCH_CUDA_CHECK(call)                                            \
  do {                                                                      \
    cudaError_t opbench_err_ = (call);                                      \
    if (opbench_err_ != cudaSuccess)                                        \
      ::opbench::throw_cuda_error(opbench_err_, #call, __FILE__, __LINE__); \
  } while (0)
