#pragma once
// The SM clock, read by the GPU itself: a one-thread kernel spins a fixed number of SM cycles
// (clock64) and times them with the nanosecond global timer (%globaltimer). No NVML needed, so
// binaries still start on machines without the driver's management library.
#include <cuda_runtime_api.h>

namespace opbench {

// The SM clock in MHz over a ~0.5 ms spin on `stream` (synchronizes the stream).
double probe_sm_clock_mhz(cudaStream_t stream);

}  // namespace opbench
