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
// number, how many splits (or shrinks) of the parent came before (a split is a call of every
// member of the parent, a shrink of every member it keeps, so the count is the same in each) and
// the color, or the ranks left out: what its members share. ncclCommInitAll (one process, every
// member) is not followed: 0. Where NCCL_COMM_ID gives every unique id the same bytes, the
// communicators of one size share a number.
#include <nccl.h>

#include <cstdint>

namespace opbench::capture {

// The number of `comm` as above; 0 for a communicator the capture did not see made.
std::uint64_t nccl_comm_id(ncclComm_t comm);

// Takes in the children of splits whose handle NCCL has written since (a nonblocking split, one
// inside a group): called where NCCL's work is known done, at ncclGroupEnd's return and whenever
// ncclCommGetAsyncError is asked. Cheap when none waits.
void nccl_take_finished_children();

}  // namespace opbench::capture
