#pragma once
// The collective operations, their reduction ops, and the size and bandwidth arithmetic of
// nccl-tests, so that `size`, algbw and busbw compare 1:1 with it:
//   size  = max(send, recv) bytes of one rank's call
//   algbw = bytes / time;  busbw = algbw · factor
//   op              bytes                         factor
//   all_reduce      count·ts                      2(n-1)/n
//   all_gather      recvcount·ts = n·sendcount·ts  (n-1)/n
//   reduce_scatter  sendcount·ts = n·recvcount·ts  (n-1)/n
//   all_to_all      n·count_per_peer·ts           (n-1)/n
//   broadcast, reduce, send_recv  count·ts        1
#include <cstdint>
#include <string>
#include <vector>

#include "common/coll_formulas.hpp"
#include "common/dtype.hpp"

namespace opbench {

// CollOp, RedOp, CollCounts, exact_counts, algbw_bytes, busbw_factor: common/coll_formulas.hpp

std::string coll_op_name(CollOp op);
std::vector<CollOp> all_coll_ops();
// Comma-separated op names, or "all". Accepts nccl-tests spellings (allreduce, alltoall, sendrecv).
std::vector<CollOp> parse_coll_ops(const std::string& text);
bool is_reduction(CollOp op);  // takes a reduction op
bool has_root(CollOp op);      // broadcast, reduce

std::string red_op_name(RedOp op);
RedOp parse_red_op(const std::string& text);

// nccl-tests' type names, for the table that is diffed against it ("float", "half", "bfloat16").
std::string nccl_tests_type_name(DType t);

// Element counts of one rank's call for a requested size in bytes, rounded as nccl-tests rounds
// them: all_gather, reduce_scatter and all_to_all take count/n per rank, aligned down to 16 bytes.
CollCounts coll_counts(CollOp op, std::uint64_t size_bytes, std::size_t type_size, int nranks);

// The sizes of a sweep, as nccl-tests makes them: from min to max, times `factor` when factor > 1,
// else plus `step` bytes.
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                       double factor, std::uint64_t step_bytes);

}  // namespace opbench
