#include "common/cuda/device.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "common/cuda/check.hpp"

namespace opbench {
namespace {

std::string version_text(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

}  // namespace

int cuda_device_count(std::string* why_none) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why_none) *why_none = no_gpu_reason(err, driver_library_present());
    cudaGetLastError();  // clear the sticky error so later calls are not affected
    return 0;
  }
  if (count == 0 && why_none) *why_none = "no NVIDIA GPU found (the driver sees none)";
  return count;
}

bool driver_library_present() {
  // The runtime says cudaErrorInsufficientDriver both when no driver is installed and when it is
  // too old; whether libcuda loads tells the two apart. RTLD_NOLOAD would miss an unloaded one.
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

std::string no_gpu_reason(int cuda_error, bool driver_present) {
  const auto err = static_cast<cudaError_t>(cuda_error);
  const std::string cuda_says =
      fmt::format("{}: {}", cudaGetErrorName(err), cudaGetErrorString(err));
  if (err == cudaErrorNoDevice) return "no NVIDIA GPU found (" + cuda_says + ")";
  if (err == cudaErrorInsufficientDriver && !driver_present)
    return "no NVIDIA driver or GPU found (libcuda.so.1 is not installed)";
  if (err == cudaErrorInsufficientDriver) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return fmt::format(
        "the NVIDIA driver is too old for this build's CUDA runtime {} (update the driver; {})",
        version_text(runtime), cuda_says);
  }
  return cuda_says;
}

CudaDeviceInfo cuda_device_info(int device) {
  cudaDeviceProp p{};
  OPBENCH_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  CudaDeviceInfo info;
  info.index = device;
  info.name = p.name;
  char bus[32] = {};
  OPBENCH_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device));
  info.pci_bus_id = bus;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  int l2 = 0, clock = 0;
  OPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  OPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, device));
  info.l2_bytes = static_cast<std::uint64_t>(l2);
  info.max_sm_clock_khz = clock;
  info.total_memory_bytes = p.totalGlobalMem;
  return info;
}

std::uint64_t cuda_free_memory_bytes(int device) {
  OPBENCH_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free = 0, total = 0;
  OPBENCH_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

LibraryVersion cuda_runtime_library_version() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  return {
      "CUDA runtime", version_text(CUDART_VERSION),
      fmt::format("{} (driver {})", version_text(runtime), driver ? version_text(driver) : "none")};
}

void add_cuda_environment(Environment& env, int device) {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  env.add_library("CUDA runtime", version_text(runtime));
  env.add_library("CUDA driver", driver ? version_text(driver) : "none");
  auto d = cuda_device_info(device);
  env.add_device({{"index", d.index},
                  {"name", d.name},
                  {"pci_bus_id", d.pci_bus_id},
                  {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                  {"sm_count", d.sm_count},
                  {"l2_bytes", d.l2_bytes},
                  {"memory_bytes", d.total_memory_bytes},
                  {"max_sm_clock_mhz", d.max_sm_clock_khz / 1000}});
}

}  // namespace opbench
