#pragma once
// The collective operations and nccl-tests' byte arithmetic as pure inline functions, with no
// dependency beyond the standard library: bench_ccl (collectives/coll_op) and the capture library
// (capture/, an LD_PRELOAD object that must not pull in MPI, CUDA or opbench_common) count a
// collective's bytes with the same code (docs/formulas.md#collectives).
//   op              algbw bytes                    busbw factor
//   all_reduce      count·ts                       2(n-1)/n
//   all_gather      recvcount·ts = n·sendcount·ts  (n-1)/n
//   reduce_scatter  sendcount·ts = n·recvcount·ts  (n-1)/n
//   all_to_all      n·count_per_peer·ts            (n-1)/n
//   broadcast, reduce, send_recv  count·ts         1
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

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

constexpr std::string_view coll_op_id(CollOp op) {
  switch (op) {
    case CollOp::all_reduce:
      return "all_reduce";
    case CollOp::all_gather:
      return "all_gather";
    case CollOp::reduce_scatter:
      return "reduce_scatter";
    case CollOp::all_to_all:
      return "all_to_all";
    case CollOp::broadcast:
      return "broadcast";
    case CollOp::reduce:
      return "reduce";
    case CollOp::send_recv:
      return "send_recv";
  }
  return "";
}

constexpr std::string_view red_op_id(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return "sum";
    case RedOp::prod:
      return "prod";
    case RedOp::min:
      return "min";
    case RedOp::max:
      return "max";
    case RedOp::avg:
      return "avg";
  }
  return "";
}

// Element counts of one rank's call.
struct CollCounts {
  std::int64_t send_count = 0;  // elements in the send buffer
  std::int64_t recv_count = 0;  // elements in the receive buffer
  std::int64_t count = 0;       // the count passed to the op (per rank / per peer where it applies)
  // In-place: the send buffer lives inside the receive buffer (or the reverse) at these element
  // offsets times the rank (all_gather: send at recv + rank·count; reduce_scatter: recv at
  // send + rank·count), as nccl-tests lays them out.
  std::int64_t send_inplace_offset = 0;
  std::int64_t recv_inplace_offset = 0;

  // max(send, recv) bytes: nccl-tests' `size`
  std::int64_t size_bytes(std::size_t type_size) const {
    return std::max(send_count, recv_count) * static_cast<std::int64_t>(type_size);
  }
};

// The counts of a call whose per-rank (per-peer) count is known exactly: the count argument of
// ncclAllGather / MPI_Allgather (send count), ncclReduceScatter / MPI_Reduce_scatter_block
// (receive count), MPI_Alltoall (count per peer), the others' count.
inline CollCounts exact_counts(CollOp op, std::int64_t count, std::int64_t nranks) {
  CollCounts c;
  c.count = count;
  switch (op) {
    case CollOp::all_gather:
      c.send_count = count;
      c.recv_count = count * nranks;
      c.send_inplace_offset = count;
      break;
    case CollOp::reduce_scatter:
      c.send_count = count * nranks;
      c.recv_count = count;
      c.recv_inplace_offset = count;
      break;
    case CollOp::all_to_all:
      c.send_count = c.recv_count = count * nranks;
      break;
    default:
      c.send_count = c.recv_count = count;
  }
  return c;
}

// Bytes that algbw divides by time, for a call with counts c.
inline double algbw_bytes(CollOp op, const CollCounts& c, std::size_t type_size, int nranks) {
  const double ts = static_cast<double>(type_size);
  switch (op) {
    case CollOp::all_gather:
      return static_cast<double>(c.recv_count) * ts;
    case CollOp::reduce_scatter:
      return static_cast<double>(c.send_count) * ts;
    case CollOp::all_to_all:
      return static_cast<double>(nranks) * static_cast<double>(c.count) * ts;
    default:
      return static_cast<double>(c.count) * ts;
  }
}

inline double busbw_factor(CollOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case CollOp::all_reduce:
      return 2.0 * (n - 1) / n;
    case CollOp::all_gather:
    case CollOp::reduce_scatter:
    case CollOp::all_to_all:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

}  // namespace opbench
