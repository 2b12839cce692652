// How our CUDA launches are checked and how cleanup changes device, through the CUDA runtime on
// whatever machine runs the tests (none of it needs a GPU):
// - a launch check reports the launch alone: an error an earlier runtime call left pending (one
//   its caller already handled) is taken before the launch instead of being blamed on it;
// - the cleanup form of DeviceScope never throws, where the throwing form does.
#include <catch2/catch.hpp>

#include <new>
#include <string>

#include "common/cuda/check.hpp"
#include "common/cuda/device_scope.hpp"

using namespace opbench;

namespace {
constexpr int kNoSuchDevice = 1 << 20;
}

TEST_CASE("launch check: the message names the launch, and an error pending before it") {
  CHECK(launch_failure_text(cudaErrorInvalidConfiguration, cudaSuccess, "rmsnorm_fwd_kernel",
                            "memops/cuda_memops.cu", 1000) ==
        "CUDA error cudaErrorInvalidConfiguration (invalid configuration argument) launching "
        "rmsnorm_fwd_kernel at memops/cuda_memops.cu:1000");
  CHECK(launch_failure_text(cudaErrorIllegalAddress, cudaErrorIllegalAddress, "count_kernel",
                            "f.cu", 7) ==
        "CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered) launching "
        "count_kernel at f.cu:7 (an earlier call had left cudaErrorIllegalAddress pending)");
}

TEST_CASE("launch check: an error an earlier call left pending is not reported as the launch's") {
  take_pending_cuda_error();
  // An earlier call fails and its caller goes on (as after a cuDNN engine candidate refused).
  const cudaError_t failed = cudaSetDevice(kNoSuchDevice);
  REQUIRE(failed != cudaSuccess);
  const cudaError_t pending = take_pending_cuda_error();
  CHECK(pending == failed);
  if (cudaPeekAtLastError() == cudaSuccess) {
    // A machine with a driver: cudaErrorInvalidDevice is not sticky, taking it cleared it, and
    // the check after our (here: empty) launch passes — before the fix it threw, blaming us.
    CHECK_NOTHROW(check_launch_since(pending, "no kernel", __FILE__, __LINE__));
  } else {
    // No driver (this CI machine): every runtime call fails, as after a sticky error; the check
    // fails and says the error was there before the launch.
    CHECK_THROWS_WITH(
        check_launch_since(pending, "no kernel", __FILE__, __LINE__),
        Catch::Contains("launching no kernel") && Catch::Contains("an earlier call had left"));
  }
  take_pending_cuda_error();
}

TEST_CASE("DeviceScope: the cleanup form never throws where the plain form does") {
  CHECK_THROWS_AS(DeviceScope(kNoSuchDevice), Error);
  take_pending_cuda_error();
  bool entered = true;
  CHECK_NOTHROW([&] {
    DeviceScope scope(kNoSuchDevice, std::nothrow);
    entered = scope.entered();
  }());
  CHECK_FALSE(entered);
}
