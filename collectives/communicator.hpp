#pragma once
// One collective call and the interface both backends implement: NCCL on device buffers and
// MPI on host buffers. The runner (coll_runner) times and verifies calls through it.
#include <cstdint>
#include <optional>
#include <string>

#include "collectives/coll_op.hpp"
#include "common/dtype.hpp"

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
  // Runs one call timed alone (CUDA events or MPI_Wtime), in microseconds.
  virtual double time_one(const CollCall& call) = 0;
  // Refills the input with the check pattern, runs one call and counts this rank's wrong result
  // elements. corrupt_for_test spoils one element first, to prove the check sees it.
  virtual std::int64_t check(const CollCall& call, bool corrupt_for_test) = 0;
  // Tears the communicator down without waiting for peers: after an error, never destroy a
  // communicator with work in flight (ncclCommDestroy would wait for it forever).
  virtual void abort() = 0;
  // Whether abort() was called: the next case needs a new communicator.
  virtual bool aborted() const = 0;
};

}  // namespace opbench
