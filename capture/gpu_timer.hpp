#pragma once
// GPU time of intercepted calls without synchronizing the application: two CUDA events from a
// pool are recorded on the call's stream around the call, and a background thread asks the
// driver whether the second has completed (cuEventQuery) and, once it has, how far apart they
// are (cuEventElapsedTime). The driver API is used rather than the runtime's: every CUDA program
// has libcuda.so.1 loaded, while the runtime may be linked statically into the program, and the
// two APIs' stream handles are interchangeable (CUDA Driver API, "Difference between the driver
// and runtime APIs"). The functions are found at run time, like every real function here.
//
// NVIDIA's documentation relied on (CUDA Driver API, Event Management): cuEventRecord captures
// the stream's work at the time of the call and is itself asynchronous; cuEventQuery returns
// CUDA_SUCCESS once that work is complete and CUDA_ERROR_NOT_READY before, without blocking;
// cuEventElapsedTime gives milliseconds between two completed events (resolution about 0.5 µs)
// and needs events created without CU_EVENT_DISABLE_TIMING. An event belongs to the context
// current when it was created, so the pool is per context and the poller makes the event's
// context current before querying it.
#include "capture/table.hpp"

namespace opbench::capture {

// An in-flight timing: the start event recorded, the end event to record after the call.
struct GpuTiming {
  void* start = nullptr;
  void* end = nullptr;
  void* context = nullptr;
  bool ok = false;  // false: no events (no CUDA context, or the driver is missing): count untimed
};

// Records the start event on `stream` (a cudaStream_t / CUstream); call before the real call.
GpuTiming gpu_begin(void* stream);
// Records the end event on `stream` and hands the pair to the poller, which records `key` with
// the elapsed time once the stream has reached it. Without events, records `key` untimed.
void gpu_end(GpuTiming& timing, void* stream, const CaptureKey& key);
// The call failed: hands the events back without recording anything.
void gpu_cancel(GpuTiming& timing);
// Drains the completed timings now, without waiting for the rest (the exit path).
void gpu_drain();

}  // namespace opbench::capture
