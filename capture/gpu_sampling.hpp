#pragma once
// Which GPU calls the capture times. Each timed call costs the job two CUDA events: two driver
// calls on the host and, on the GPU, two timestamps in the stream between the job's kernels. On
// an H200 (issue 41) a PyTorch step of a 1B model with 345 cuBLAS calls ran 1.2-2.4% slower
// under the capture with every call timed, where the goal is 1%. A shape's times are steady
// from call to call, so after a shape's first `time_first` calls the capture times one call in
// `one_in` and counts the others untimed (Untimed::not_sampled): every call is still counted,
// and the averages, percentiles and in-job figures come from the timed ones.
//
// Which call of a window of `one_in` is timed is a hash of the shape and the window, not always
// the first: a job that calls a shape k times a step (once a layer) would otherwise time the
// same layer's call every step wherever k is a multiple of `one_in`.
//
// Host-side calls (BLAS, MPI) are timed with the host clock and always timed. The CUDA-graph
// checks come first, so a call made inside a graph capture is still counted as such; a call an
// NCCL nonblocking communicator enqueues later (ncclInProgress, known only after the call) is
// counted as such whether the sampling picked it or not (gpu_end_untimed).
#include <cstdint>

#include "capture/table.hpp"

namespace opbench::capture {

struct GpuSampling {
  std::uint64_t time_first = 32;  // OPBENCH_CAPTURE_TIME_FIRST: every call of a shape, up to this
  std::uint64_t one_in = 8;       // OPBENCH_CAPTURE_SAMPLE: then one call in this many (1: all)
};

// Whether the call that is the `index`-th (from 0) of a shape whose key hashes to `hash` is
// timed under `s`. Exactly one call of each full window of `one_in` calls after the first
// `time_first` is.
bool sampled_call(const GpuSampling& s, std::uint64_t hash, std::uint64_t index);

// The process's setting (from the environment, runtime.cpp), and whether this call of `key`
// is timed: counts the call of its shape (calls of shapes whose hashes meet in the table of
// counters share a count, which only shortens their every-call start).
void set_gpu_sampling(const GpuSampling& s);
const GpuSampling& gpu_sampling();
bool sample_gpu_call(const CaptureKey& key);

}  // namespace opbench::capture
