#pragma once
// What NCCL can do in this job, and how bench_ccl lays out its calls, decided on the host so it
// is tested without a GPU. Header-only and free of NCCL's headers.
#include <cstddef>
#include <optional>
#include <string>

#include "common/version.hpp"

namespace opbench {

// fp8 types exist in NCCL from 2.24.0 (ncclFloat8e4m3, ncclFloat8e5m2), and NCCL reduces them
// on compute capability 9.0 and newer only — every rank's, so the lowest across the ranks
// decides (`min_cc` = major·10 + minor). Why a call cannot run, or nullopt.
inline std::optional<std::string> nccl_fp8_refusal(int nccl_version, int min_cc, bool reduces) {
  if (nccl_version < 22400)
    return "fp8 collectives need NCCL 2.24.0 or newer at run time; this job runs " +
           version_from_int(nccl_version);
  if (reduces && min_cc < 90)
    return "NCCL reduces fp8 on compute capability 9.0 and newer; the lowest among the ranks is " +
           std::to_string(min_cc / 10) + "." + std::to_string(min_cc % 10);
  return std::nullopt;
}

// ncclConfig_t.nvlinkCentricSched (NCCL 2.28 and newer), set as nccl-tests sets it: it changes
// how kernels are scheduled on NVLink-heavy systems (B200, GB200), and so their figures.
inline bool nccl_has_nvlink_centric_sched(int nccl_version) {
  return nccl_version >= 22800;
}

// What tearing an NCCL communicator down touches, so that the order is decided (and tested) on
// the host. A CUDA graph that captured NCCL calls holds references on the communicator
// (enqueue.cc: `comm->persistentRefs += nPlans`, dropped by the graph's destructor), and both
// ncclCommDestroy and ncclCommAbort wait for them (init.cc, commDestroySync: "keep polling until
// all graphs referencing us die"); NVIDIA's CUDA-graph troubleshooting guide: "CUDA graphs must
// be destroyed before NCCL communicators" (docs.nvidia.com/dl-cuda-graph, "Process Hang"). A
// graph left alive until the members' destructors run would hang every -G run at its end.
class NcclTeardownSteps {
 public:
  virtual ~NcclTeardownSteps() = default;
  virtual bool holds_graph() const = 0;
  virtual void synchronize_stream() = 0;    // waits for the replays in flight
  virtual void release_graph() = 0;         // cudaGraphExecDestroy + cudaGraphDestroy
  virtual void destroy_communicator() = 0;  // ncclCommDestroy
  virtual void abort_communicator() = 0;    // ncclCommAbort
};

enum class NcclTeardown {
  destroy,  // the normal end: the graph's replays finish, then graph, then communicator
  abort,    // after an error: nothing waits for peers
};

// all_to_all as NCCL's own ncclAlltoAll (from NCCL 2.28) where both the headers built with and
// the library running have it, as nccl-tests 2.19 runs it (alltoall.cu, AlltoAllRunColl: the
// same two checks); else one send and one receive a peer in a group, nccl-tests' fallback.
inline bool nccl_native_all_to_all(int built_version, int running_version) {
  return built_version >= 22800 && running_version >= 22800;
}

// How a communicator still held is torn down by its destructor: destroyed at a normal end; while
// an error unwinds the stack (it escaped a case, and the job ends by MPI_Abort once it is
// caught), aborted: ncclCommDestroy is an intra-node collective (NCCL's documentation), which
// waits for peers that may be stuck in a call of their own, with no watchdog left to end it.
inline NcclTeardown teardown_at_destruction(int uncaught_exceptions) {
  return uncaught_exceptions > 0 ? NcclTeardown::abort : NcclTeardown::destroy;
}

// The graph goes first in both. Destroy synchronizes the stream before releasing it so no
// replay is cut short. Abort does not: a peer that died would keep the replay from finishing
// and the synchronize would hang, the very thing abort exists to avoid; a graph destroyed while
// in flight is freed when it completes (cudaGraphExecDestroy: "If the executable graph is
// in-flight, it will not be terminated, but rather freed asynchronously on completion"), which
// ncclCommAbort's abort flag brings about, and its references drop then.
inline void nccl_teardown(NcclTeardownSteps& steps, NcclTeardown how) {
  if (steps.holds_graph()) {
    if (how == NcclTeardown::destroy) steps.synchronize_stream();
    steps.release_graph();
  }
  if (how == NcclTeardown::destroy)
    steps.destroy_communicator();
  else
    steps.abort_communicator();
}

// ncclConfig_t.graphUsageMode: 1 (graph capture, no mixing) with -G, 0 (no capture) without, as
// a framework that replays its collectives from CUDA graphs sets it (TensorRT-LLM does, under
// NCCL_VERSION_CODE >= NCCL_VERSION(2,29,0)). NCCL's default, 2, lets captured and plain calls
// mix by adding event wait and record nodes around every captured collective. nccl-tests (2.19.6,
// read 2026-11-29) does not set the field, so on NCCL 2.29 and later its -G runs mode 2 and may
// be slower than ours at small sizes (an earlier comment here said nccl-tests sets it: it does
// not). The field exists from NCCL 2.29 (nccl.h's ncclConfig_t; 2.28.9's has no such field):
// both the headers built with and the library running must have it. The mode, or nullopt where
// not set.
inline std::optional<int> nccl_graph_usage_mode(int built_version, int running_version,
                                                bool cuda_graphs) {
  if (built_version < 22900 || running_version < 22900) return std::nullopt;
  return cuda_graphs ? 1 : 0;
}

// Where call `iteration` starts inside buffers of `capacity` bytes, for calls of `call_bytes`
// (max of send and receive): each iteration takes the next slice, as nccl-tests does (buffers
// sized for the largest size of the sweep), so small calls do not re-read a cached slice.
inline std::size_t rotation_offset(std::size_t call_bytes, std::size_t capacity, long iteration) {
  if (call_bytes == 0 || capacity < call_bytes) return 0;
  const std::size_t steps = capacity / call_bytes;
  return call_bytes * (static_cast<std::size_t>(iteration) % steps);
}

}  // namespace opbench
