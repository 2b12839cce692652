// NCCL hooks: the collectives and send/recv, keyed as bench_ccl counts them
// (common/coll_formulas.hpp: nccl-tests' bytes for the communicator's size) and timed with CUDA
// events on the call's stream (gpu_timer.hpp). Between ncclGroupStart and ncclGroupEnd, NCCL
// only queues the operations and launches them at ncclGroupEnd, so a group is timed as one
// operation: events around ncclGroupEnd on the stream of the group's first operation, one row
// keyed by api ncclGroupEnd, the op when every operation of the group has the same one (send and
// recv together are send_recv), else `group`, and the sums of their counts and bytes.
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "capture/gpu_timer.hpp"
#include "capture/nccl_comms.hpp"
#include "capture/runtime.hpp"
#include "common/coll_formulas.hpp"

namespace opbench::capture {
namespace {

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;  // ncclInt64, ncclUint64, ncclFloat64
  }
}

const char* dtype_of(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "fp16";
    case ncclFloat32:
      return "fp32";
    case ncclFloat64:
      return "fp64";
    case ncclBfloat16:
      return "bf16";
    case ncclFloat8e4m3:
      return "fp8_e4m3";
    case ncclFloat8e5m2:
      return "fp8_e5m2";
    default:
      return "other";
  }
}

const char* redop_of(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return "other";  // ncclRedOpCreatePreMulSum's ops
  }
}

int comm_count(ncclComm_t comm) {
  static std::atomic<void*> slot{nullptr};
  int n = 0;
  real_function<ncclResult_t (*)(const ncclComm_t, int*)>(slot, "ncclCommCount")(comm, &n);
  return n;
}

int comm_rank(ncclComm_t comm) {
  static std::atomic<void*> slot{nullptr};
  int rank = 0;
  real_function<ncclResult_t (*)(const ncclComm_t, int*)>(slot, "ncclCommUserRank")(comm, &rank);
  return rank;
}

// In place: the result written over the input (NCCL's docs, "In-place Operations": all_gather's
// sendbuff at the rank's offset in recvbuff, reduce_scatter's recvbuff at the rank's offset in
// sendbuff, the others sendbuff == recvbuff).
CaptureKey placed(CaptureKey key, CollOp op, const void* s, const void* r, ncclDataType_t t,
                  std::size_t count, ncclComm_t comm) {
  const auto* send = static_cast<const char*>(s);
  const auto* recv = static_cast<const char*>(r);
  bool in_place = send == recv;
  if (op == CollOp::all_gather || op == CollOp::reduce_scatter) {
    const std::size_t offset = static_cast<std::size_t>(comm_rank(comm)) * count * type_size(t);
    in_place = op == CollOp::all_gather ? send == recv + offset : send + offset == recv;
  }
  key.placement = in_place ? "in_place" : "out_of_place";
  return key;
}

CaptureKey nccl_key(const char* api, const char* kind, const char* op_name, CollOp op,
                    ncclDataType_t t, std::size_t count, ncclComm_t comm, const char* redop) {
  CaptureKey key = collective_key(api, kind, op_name, op, dtype_of(t), type_size(t),
                                  static_cast<std::int64_t>(count), comm_count(comm), redop);
  key.comm_id = nccl_comm_id(comm);
  return key;
}

CaptureKey coll(const char* api, CollOp op, ncclDataType_t t, std::size_t count, ncclComm_t comm,
                const char* redop = "") {
  return nccl_key(api, "collective", coll_op_id(op).data(), op, t, count, comm, redop);
}

// The operations queued on this thread inside ncclGroupStart/End (groups nest; the outermost
// ncclGroupEnd launches them), with the communicator and stream of each.
struct Group {
  int depth = 0;
  std::vector<CaptureKey> ops;
  std::vector<std::pair<ncclComm_t, cudaStream_t>> where;
};
thread_local Group t_group;

// A nonblocking communicator (ncclConfig_t.blocking = 0) answers ncclInProgress and enqueues the
// kernel later from NCCL's own thread, after the end event: such a call is counted, untimed.
void end_timing(GpuTiming& timing, cudaStream_t stream, ncclResult_t rc, const CaptureKey& key) {
  if (rc == ncclSuccess)
    gpu_end(timing, stream, key);
  else if (rc == ncclInProgress)
    gpu_end_untimed(timing, key, Untimed::enqueued_later);
  else
    gpu_cancel(timing);
}

// One operation: inside a group it joins the group's list; outside it is timed on its stream.
template <class Call, class Key>
ncclResult_t op_call(ncclComm_t comm, cudaStream_t stream, Call&& call, Key&& key) {
  if (!should_record()) return call();
  if (t_group.depth > 0) {
    CallScope scope;
    const ncclResult_t rc = call();
    if (rc == ncclSuccess || rc == ncclInProgress) {
      t_group.ops.push_back(key());
      t_group.where.emplace_back(comm, stream);
    }
    return rc;
  }
  CallScope scope;
  const CaptureKey k = key();
  GpuTiming timing = gpu_begin(stream, k);
  const ncclResult_t rc = call();
  end_timing(timing, stream, rc, k);
  return rc;
}

CaptureKey group_key(const std::vector<CaptureKey>& ops) {
  CaptureKey key = ops.front();
  key.api = "ncclGroupEnd";
  bool same = true, p2p = true;
  key.count = key.bytes = 0;
  for (const CaptureKey& o : ops) {
    same = same && std::strcmp(o.op, ops.front().op) == 0;
    p2p = p2p && std::strcmp(o.kind, "p2p") == 0;
    key.count += o.count;
    key.bytes += o.bytes;
  }
  key.kind = p2p ? "p2p" : "collective";
  key.op = same ? ops.front().op : (p2p ? "send_recv" : "group");
  if (!same) key.redop = "";
  return key;
}

// A group's operations by communicator and stream, in the order each pair first appears. One
// process driving several GPUs puts one operation a GPU in a group (NCCL's "Management of
// multiple GPUs from one thread"): each GPU's all_reduce of N elements is its own operation, not
// one of N x GPUs, and each runs on its own device's stream, which the events of the context
// current at ncclGroupEnd cannot time.
std::vector<std::vector<CaptureKey>> group_parts(
    const std::vector<CaptureKey>& ops,
    const std::vector<std::pair<ncclComm_t, cudaStream_t>>& where) {
  std::vector<std::pair<ncclComm_t, cudaStream_t>> seen;
  std::vector<std::vector<CaptureKey>> parts;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto at = std::find(seen.begin(), seen.end(), where[i]);
    if (at == seen.end()) {
      seen.push_back(where[i]);
      parts.push_back({ops[i]});
    } else {
      parts[static_cast<std::size_t>(at - seen.begin())].push_back(ops[i]);
    }
  }
  return parts;
}

}  // namespace
}  // namespace opbench::capture

using namespace opbench::capture;
using opbench::CollOp;

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclAllReduce(const void* s, void* r, size_t count,
                                                  ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                                                  cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclAllReduce, ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t,
                                                 ncclRedOp_t, ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclAllReduce(s, r, count, t, op, comm, stream); },
      [&] {
        return placed(coll("ncclAllReduce", CollOp::all_reduce, t, count, comm, redop_of(op)),
                      CollOp::all_reduce, s, r, t, count, comm);
      });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclAllGather(const void* s, void* r, size_t sendcount,
                                                  ncclDataType_t t, ncclComm_t comm,
                                                  cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclAllGather, ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t,
                                                 ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclAllGather(s, r, sendcount, t, comm, stream); },
      [&] {
        return placed(coll("ncclAllGather", CollOp::all_gather, t, sendcount, comm),
                      CollOp::all_gather, s, r, t, sendcount, comm);
      });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclReduceScatter(const void* s, void* r, size_t recvcount,
                                                      ncclDataType_t t, ncclRedOp_t op,
                                                      ncclComm_t comm, cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclReduceScatter, ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t,
                                                     ncclRedOp_t, ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclReduceScatter(s, r, recvcount, t, op, comm, stream); },
      [&] {
        return placed(
            coll("ncclReduceScatter", CollOp::reduce_scatter, t, recvcount, comm, redop_of(op)),
            CollOp::reduce_scatter, s, r, t, recvcount, comm);
      });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclAlltoAll(const void* s, void* r, size_t count,
                                                 ncclDataType_t t, ncclComm_t comm,
                                                 cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclAlltoAll, ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t,
                                                ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclAlltoAll(s, r, count, t, comm, stream); },
      [&] {
        return placed(coll("ncclAlltoAll", CollOp::all_to_all, t, count, comm), CollOp::all_to_all,
                      s, r, t, count, comm);
      });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclBroadcast(const void* s, void* r, size_t count,
                                                  ncclDataType_t t, int root, ncclComm_t comm,
                                                  cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclBroadcast, ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t, int,
                                                 ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclBroadcast(s, r, count, t, root, comm, stream); },
      [&] {
        return placed(coll("ncclBroadcast", CollOp::broadcast, t, count, comm), CollOp::broadcast,
                      s, r, t, count, comm);
      });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclReduce(const void* s, void* r, size_t count,
                                               ncclDataType_t t, ncclRedOp_t op, int root,
                                               ncclComm_t comm, cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclReduce, ncclResult_t(*)(const void*, void*, size_t, ncclDataType_t,
                                              ncclRedOp_t, int, ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclReduce(s, r, count, t, op, root, comm, stream); },
      [&] {
        return placed(coll("ncclReduce", CollOp::reduce, t, count, comm, redop_of(op)),
                      CollOp::reduce, s, r, t, count, comm);
      });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t t,
                                             int peer, ncclComm_t comm, cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclSend, ncclResult_t(*)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                                            cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclSend(buf, count, t, peer, comm, stream); },
      [&] { return nccl_key("ncclSend", "p2p", "send", CollOp::send_recv, t, count, comm, ""); });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t t, int peer,
                                             ncclComm_t comm, cudaStream_t stream) {
  OPBENCH_REAL_FN(ncclRecv,
                  ncclResult_t(*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t));
  return op_call(
      comm, stream, [&] { return real_ncclRecv(buf, count, t, peer, comm, stream); },
      [&] { return nccl_key("ncclRecv", "p2p", "recv", CollOp::send_recv, t, count, comm, ""); });
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclGroupStart() {
  OPBENCH_REAL_FN(ncclGroupStart, ncclResult_t(*)());
  const ncclResult_t rc = real_ncclGroupStart();
  if (rc == ncclSuccess && should_record()) ++t_group.depth;
  return rc;
}

// ncclGroupEnd, which also completes the splits of the group (nccl_comms.hpp).
static ncclResult_t group_end() {
  OPBENCH_REAL_FN(ncclGroupEnd, ncclResult_t(*)());
  const ncclResult_t rc = real_ncclGroupEnd();
  nccl_take_finished_children();
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclGroupEnd() {
  if (t_group.depth == 0 || t_depth > 0) return group_end();
  if (--t_group.depth > 0 || t_group.ops.empty()) return group_end();
  std::vector<CaptureKey> ops;
  std::vector<std::pair<ncclComm_t, cudaStream_t>> where;
  ops.swap(t_group.ops);
  where.swap(t_group.where);
  CallScope scope;
  const std::vector<std::vector<CaptureKey>> parts = group_parts(ops, where);
  if (parts.size() > 1) {  // several communicators or streams: a row each, untimed
    const ncclResult_t rc = group_end();
    if (rc == ncclSuccess || rc == ncclInProgress)
      for (const auto& part : parts)
        record_untimed(group_key(part), Untimed::several_communicators);
    return rc;
  }
  const cudaStream_t stream = where.front().second;
  const CaptureKey key = group_key(ops);
  GpuTiming timing = gpu_begin(stream, key);
  const ncclResult_t rc = group_end();
  end_timing(timing, stream, rc, key);
  return rc;
}
