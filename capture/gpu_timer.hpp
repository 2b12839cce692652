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
//
// The job must never wait for the capture: a hooked call only takes events from a pool and hands
// a pair over, under a lock that no driver call is ever made under; the poller queries outside
// it, every millisecond while timings are in flight, and sleeps when none are. A CUDA-graph capture
// in global mode (torch.cuda.graph's default) is invalidated by an event query from any thread
// whose capture mode is not relaxed (CUDA Driver API, cuThreadExchangeStreamCaptureMode;
// PyTorch's NCCL watchdog hit it: pytorch#104555), so the poller and the exit drain run relaxed.
#include "capture/table.hpp"

namespace opbench::capture {

// An in-flight timing: the start event recorded, the end event to record after the call.
struct GpuTiming {
  void* start = nullptr;
  void* end = nullptr;
  void* context = nullptr;
  // Which context made the events: its unique id (cuCtxGetId), which a context made later under
  // the same handle (after cudaDeviceReset) does not share; the handle where the driver has no ids
  unsigned long long context_id = 0;
  void* stream = nullptr;
  bool ok = false;  // false: the call is counted untimed, for `why`
  Untimed why = Untimed::no_gpu_events;
};

// Records the start event on `stream` (a cudaStream_t / CUstream) for the call of `key` about
// to be made, unless the call is not to be timed (a CUDA-graph capture, the sampling:
// gpu_sampling.hpp); call before the real call.
GpuTiming gpu_begin(void* stream, const CaptureKey& key);
// Records the end event on `stream` and hands the pair to the poller, which records `key` with
// the elapsed time once the stream has reached it. Without events, records `key` untimed.
void gpu_end(GpuTiming& timing, void* stream, const CaptureKey& key);
// The call succeeded but its GPU work cannot be timed by these events (an NCCL nonblocking
// communicator's ncclInProgress): hands the events back and records `key` untimed for `why`
// (or for the reason gpu_begin already had).
void gpu_end_untimed(GpuTiming& timing, const CaptureKey& key, Untimed why);
// The call failed: hands the events back without recording anything.
void gpu_cancel(GpuTiming& timing);
// The exit path: records the timings that complete within a second, then counts the rest
// untimed (a kernel that never ends, a hung NCCL peer, must not hold the job's exit).
void gpu_drain();

}  // namespace opbench::capture
