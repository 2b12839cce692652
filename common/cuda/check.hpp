#pragma once
// Turns a failed CUDA runtime call into an opbench run_failure naming the call and where it was.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

#include "common/error.hpp"

namespace opbench {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  throw run_failure(fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(err),
                                cudaGetErrorString(err), call, file, line));
}

// Our launches are checked with cudaGetLastError, which "returns the last error that has been
// produced by any of the runtime calls in the same instance of the CUDA Runtime library in the
// host thread and resets it to cudaSuccess" (CUDA Runtime API, cudaGetLastError): an error an
// earlier call left pending — one that call already returned to its caller, such as a cuDNN
// engine candidate refused and skipped — would be reported as our launch's. So right before a
// launch the pending error is taken (and cleared), and the check after it reports the launch
// alone. A sticky error (an earlier kernel faulted) cannot be cleared and fails the launch too:
// the message then names it as pending before, the likely cause.
inline cudaError_t take_pending_cuda_error() noexcept {
  return cudaGetLastError();
}

// The message for a launch that failed with `err`, `pending` being what take_pending_cuda_error
// returned before it.
inline std::string launch_failure_text(cudaError_t err, cudaError_t pending, const char* what,
                                       const char* file, int line) {
  std::string text = fmt::format("CUDA error {} ({}) launching {} at {}:{}", cudaGetErrorName(err),
                                 cudaGetErrorString(err), what, file, line);
  if (pending != cudaSuccess)
    text += fmt::format(" (an earlier call had left {} pending)", cudaGetErrorName(pending));
  return text;
}

// After our launch(es) of `what`, begun with `pending` = take_pending_cuda_error().
inline void check_launch_since(cudaError_t pending, const char* what, const char* file, int line) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw run_failure(launch_failure_text(err, pending, what, file, line));
}

}  // namespace opbench

// Checks the launches made since `pending` was taken (take_pending_cuda_error), naming `what`.
#define OPBENCH_CUDA_CHECK_LAUNCH(pending, what) \
  ::opbench::check_launch_since(pending, what, __FILE__, __LINE__)

#define OPBENCH_CUDA_CHECK(call)                                            \
  do {                                                                      \
    cudaError_t opbench_err_ = (call);                                      \
    if (opbench_err_ != cudaSuccess)                                        \
      ::opbench::throw_cuda_error(opbench_err_, #call, __FILE__, __LINE__); \
  } while (0)
