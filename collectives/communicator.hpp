#pragma once
// One collective call and the interface both backends implement: NCCL on device buffers and
// MPI on host buffers. The runner (coll_runner) times and verifies calls through it.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/coll_op.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"

namespace opbench {

struct CollCall {
  CollOp op = CollOp::all_reduce;
  DType dtype = DType::fp32;
  RedOp redop = RedOp::sum;
  int root = 0;
  CollCounts counts;
  bool in_place = false;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string backend() const = 0;  // "mpi", "nccl"
  virtual int rank() const = 0;             // within this (group) communicator
  virtual int size() const = 0;
  // Why this backend cannot run a call, or nullopt.
  virtual std::optional<std::string> unsupported(const CollCall& call) const = 0;
  // Buffers of at least this many bytes (the sweep's largest call), within which the NCCL
  // backend rotates its calls as nccl-tests does. The MPI backend ignores it.
  virtual void reserve(std::size_t bytes) { (void)bytes; }
  // Allocates buffers for the call and fills its input with the check pattern.
  virtual void prepare(const CollCall& call) = 0;
  // Issues one call (MPI: runs it; NCCL: enqueues it on the stream).
  virtual void launch(const CollCall& call) = 0;
  // Waits for every issued call; throws run_failure on an asynchronous error.
  virtual void wait() = 0;
  // Issues `iters` calls back to back, a timestamp between each two (CUDA events on the stream,
  // or MPI_Wtime), and returns each call's time in microseconds (nccl-tests' per-iteration view).
  virtual std::vector<double> time_each(const CollCall& call, int iters) = 0;
  // CUDA-graph mode (nccl-tests -G): `calls` calls captured once in a graph, replayed `replays`
  // times, waited for. Only the NCCL backend has it.
  virtual void replay_graph(const CollCall& call, int calls, int replays) {
    (void)call, (void)calls, (void)replays;
    throw run_failure("CUDA-graph mode (-G) needs the NCCL backend");
  }
  // Refills the input with the check pattern, runs one call and counts this rank's wrong result
  // elements. corrupt_for_test spoils one element first, to prove the check sees it.
  virtual std::int64_t check(const CollCall& call, bool corrupt_for_test) = 0;
  // Tears the communicator down without waiting for peers: after an error, never destroy a
  // communicator with work in flight (ncclCommDestroy would wait for it forever).
  virtual void abort() = 0;
  // Whether abort() was called: the next case needs a new communicator.
  virtual bool aborted() const = 0;

  // The calls this communicator has completed since it was made, as another thread can tell
  // while the main thread is inside a call: the runner's guard reads it to tell a slow case from
  // a hung one (collectives/stall_detector.hpp). Any thread.
  virtual std::int64_t completed_calls() = 0;
  // At most how many calls complete between two steps of completed_calls() when the calls are
  // issued `at_once` at a time (one per launch, -n per CUDA-graph replay): the calls of one
  // issue where each call is counted as it returns (MPI), more where the stream is marked every
  // few calls (NCCL: collectives/progress_marks.hpp).
  virtual std::int64_t calls_per_mark(int at_once) const { return std::max(1, at_once); }
  // From the guard's thread, when a hang is about to end the process: stops the device's work
  // and drops the peers' connections (NCCL: ncclCommAbort), so that peers see the end at once and
  // no kernel spins on. Bounded: it gives up after a few seconds rather than wait for a main
  // thread stuck inside the library. Nothing to do for MPI: ending the process ends the job.
  virtual void abandon() {}
};

}  // namespace opbench
