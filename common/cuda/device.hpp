#pragma once
// CUDA device discovery and facts, read from the device itself.
#include <cstdint>
#include <string>

#include "common/env.hpp"
#include "common/version.hpp"

namespace opbench {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::uint64_t l2_bytes = 0;
  std::uint64_t total_memory_bytes = 0;
  int max_sm_clock_khz = 0;
};

// Number of usable CUDA devices; 0 when there is no driver or no device, with the reason in
// `why_none` in plain words (no_gpu_reason).
int cuda_device_count(std::string* why_none = nullptr);
// Whether the driver's libcuda.so.1 can be loaded.
bool driver_library_present();
// Why cudaGetDeviceCount failed, for people: "no NVIDIA driver or GPU found" when the runtime
// says cudaErrorInsufficientDriver and no libcuda is installed (a CPU machine), "the NVIDIA
// driver is too old ..." when one is, "no NVIDIA GPU found" for cudaErrorNoDevice; CUDA's own
// words otherwise. `cuda_error` is a cudaError_t.
std::string no_gpu_reason(int cuda_error, bool driver_present);
CudaDeviceInfo cuda_device_info(int device);
std::uint64_t cuda_free_memory_bytes(int device);

LibraryVersion cuda_runtime_library_version();

// Adds the CUDA runtime and driver versions and the device to the run's environment.
void add_cuda_environment(Environment& env, int device);

}  // namespace opbench
