#pragma once
// Holds a stream at a spinning one-thread kernel until the host releases it, so that the work a
// sample times — start event, the operation's launches, stop event — is all queued before any
// of it runs and then runs back to back. Without it the GPU idles while the host calls the
// library and launches, and a sample of a 20 µs GEMM times a few µs of host work too. This is
// nvbench's blocking kernel (nvbench/blocking_kernel.cuh, used by detail/measure_cold.cuh).
//
// The kernel gives up after a timeout (the host could block inside a launch when the queue is
// full, and would then never release it); a sample that timed out is an error, never a figure.
#include <cuda_runtime_api.h>

#include <functional>

namespace opbench {

class CudaEventTimer;

class StreamBlocker {
 public:
  explicit StreamBlocker(double timeout_s = 10.0);
  ~StreamBlocker();
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  // Queues the spinning kernel on `stream`: nothing queued after it runs until release().
  void block(cudaStream_t stream);
  void release();
  // Whether the last blocking kernel gave up before release() (read after the stream synced).
  bool timed_out() const;

 private:
  void allocate();
  volatile int* host_flags_ = nullptr;  // [0] release, [1] timed out: pinned, mapped
  int* device_flags_ = nullptr;
  unsigned long long timeout_ns_;
};

// One timed sample of GPU work on `stream`: block the stream, record the start event, enqueue
// the work, record the stop event, release, wait. Returns the microseconds between the events.
// Throws run_failure when the blocking kernel timed out (the sample would include host time).
double blocked_sample_us(cudaStream_t stream, StreamBlocker& blocker, CudaEventTimer& timer,
                         const std::function<void()>& enqueue);

// The sampling policy every GPU provider shares: samples are stream-blocked, until the library
// once waits on the host while the stream is held (seen on an H200 with cuBLASLt graphs of small
// GEMMs: the blocker timed out instead of deadlocking); from then on, until reset(), samples are
// plain event pairs, each including its launch, and fell_back() says so for the row's note.
class GpuSampler {
 public:
  explicit GpuSampler(double blocker_timeout_s = 2.0) : blocker_(blocker_timeout_s) {}
  double sample_us(cudaStream_t stream, CudaEventTimer& timer,
                   const std::function<void()>& enqueue);
  // A plain event pair, by the caller's choice: work that may itself wait on the host while
  // the stream is held (a copy from pageable memory, staged by the driver).
  static double unblocked_sample_us(cudaStream_t stream, CudaEventTimer& timer,
                                    const std::function<void()>& enqueue);
  bool fell_back() const { return unblocked_; }
  void reset() { unblocked_ = false; }  // a new case: try blocking again
  // The note a row carries after a fall-back.
  static const char* fallback_note();

 private:
  StreamBlocker blocker_;
  bool unblocked_ = false;
};

}  // namespace opbench
