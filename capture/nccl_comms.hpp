#pragma once
// Which NCCL communicator a call runs on, as a number every member process works out alike, so
// that the capture files of all ranks, read together, say which global ranks joined it: NCCL's
// API tells a process its own rank in a communicator and the communicator's size, never the other
// members. bench_ccl --capture-path then places the job's groups as they were (comm_stride from
// comm_id, common/capture_tables.cpp).
//
// A communicator made from a unique id (ncclCommInitRank, ncclCommInitRankConfig,
// ncclCommInitRankScalable) is known by a hash of the id, which every member was given. One made
// by splitting or shrinking another (ncclCommSplit, ncclCommShrink) is known by its parent's
// number, how many splits and shrinks of the parent came before (each is a call of every member
// of the parent, so the count is the same in each) and the color, or the ranks left out: what its
// members share. ncclCommInitAll (one process, every member) is not followed: 0.
#include <nccl.h>

#include <cstdint>

namespace opbench::capture {

// The number of `comm` as above; 0 for a communicator the capture did not see made.
std::uint64_t nccl_comm_id(ncclComm_t comm);

}  // namespace opbench::capture
