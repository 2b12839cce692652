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

#include "common/dtype.hpp"

namespace opbench {

enum class CollOp {
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  broadcast,
  reduce,
  send_recv
};
enum class RedOp { sum, prod, min, max, avg };

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
struct CollCounts {
  std::int64_t send_count = 0;  // elements in the send buffer
  std::int64_t recv_count = 0;  // elements in the receive buffer
  std::int64_t count = 0;       // the count passed to the op (per rank / per peer where it applies)
  // In-place: the send buffer lives inside the receive buffer (or the reverse) at these element
  // offsets times the rank (all_gather: send at recv + rank·count; reduce_scatter: recv at
  // send + rank·count), as nccl-tests lays them out.
  std::int64_t send_inplace_offset = 0;
  std::int64_t recv_inplace_offset = 0;

  std::int64_t size_bytes(std::size_t type_size) const;  // max(send, recv) bytes
};

CollCounts coll_counts(CollOp op, std::uint64_t size_bytes, std::size_t type_size, int nranks);

// The counts of a call whose per-rank (per-peer) count is known exactly, without nccl-tests'
// rounding (bench_fsdp's shards).
CollCounts exact_counts(CollOp op, std::int64_t count, std::int64_t nranks);

// Bytes that algbw divides by time, for a call with counts c (docs/formulas.md).
double algbw_bytes(CollOp op, const CollCounts& c, std::size_t type_size, int nranks);
double busbw_factor(CollOp op, int nranks);

// The sizes of a sweep, as nccl-tests makes them: from min to max, times `factor` when factor > 1,
// else plus `step` bytes.
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                       double factor, std::uint64_t step_bytes);

}  // namespace opbench
