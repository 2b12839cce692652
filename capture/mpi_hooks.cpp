// MPI hooks through the standard profiling interface: each MPI_X defined here calls PMPI_X. The
// PMPI functions are looked up at run time (runtime.hpp) rather than linked, so the library loads
// into programs that have no MPI at all (a shell, python) without pulling libmpi in. Collectives
// are keyed by op, dtype, element count, bytes as nccl-tests counts them (common/coll_formulas.hpp,
// shared with bench_ccl), communicator size and reduction op.
//
// Nonblocking calls are timed from the post to the Wait/Test call that completes them: the
// request handle is remembered at the post and looked up (copied before the call, since MPI sets
// it to MPI_REQUEST_NULL) when a Wait/Test reports it complete. A request completed any other
// way (MPI_Request_free, a persistent request) counts without a time, and the row says how many.
#include <dlfcn.h>
#include <mpi.h>

#include <pthread.h>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "capture/runtime.hpp"
#include "common/coll_formulas.hpp"
#include "common/rank_spacing.hpp"

namespace opbench::capture {
namespace {

template <class Fn>
Fn pmpi(std::atomic<void*>& slot, const char* name) {
  return real_function<Fn>(slot, name);
}

#define OPBENCH_PMPI(name, type)                  \
  static std::atomic<void*> slot_##name{nullptr}; \
  auto P##name = pmpi<type>(slot_##name, "P" #name)

int comm_size(MPI_Comm comm) {
  static std::atomic<void*> slot{nullptr};
  int n = 0;
  pmpi<int (*)(MPI_Comm, int*)>(slot, "PMPI_Comm_size")(comm, &n);
  return n;
}

int comm_rank(MPI_Comm comm) {
  static std::atomic<void*> slot{nullptr};
  int r = 0;
  pmpi<int (*)(MPI_Comm, int*)>(slot, "PMPI_Comm_rank")(comm, &r);
  return r;
}

// How far apart `comm`'s ranks are in MPI_COMM_WORLD: 1 for consecutive ranks, 8 for ranks
// 0, 8, 16, ...; 0 where they are not evenly spaced, for an intercommunicator, and for ranks
// outside this world (MPI_Comm_spawn). Worked out once per communicator and kept on it as an MPI
// attribute, which MPI drops with the communicator (a later one may reuse the handle) and does not
// copy to a duplicate (whose ranks are the same, but cheap to look at again).
int no_copy(MPI_Comm, int, void*, void*, void*, int* flag) {
  *flag = 0;
  return MPI_SUCCESS;
}
int no_delete(MPI_Comm, int, void*, void*) {
  return MPI_SUCCESS;
}

int spacing(MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Comm_test_inter, int (*)(MPI_Comm, int*));
  OPBENCH_PMPI(MPI_Comm_group, int (*)(MPI_Comm, MPI_Group*));
  OPBENCH_PMPI(MPI_Group_translate_ranks, int (*)(MPI_Group, int, const int[], MPI_Group, int[]));
  OPBENCH_PMPI(MPI_Group_free, int (*)(MPI_Group*));
  // MPI_COMM_WORLD is the address of Open MPI's ompi_mpi_comm_world: looked up as MPI_SUM is
  // (redop_of), the program's copy first
  static const auto world = [] {
    void* p = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
    return reinterpret_cast<MPI_Comm>(p != nullptr ? p : resolve_symbol("ompi_mpi_comm_world"));
  }();
  // a program of MPI sessions only, which never called MPI_Init, has no MPI_COMM_WORLD to ask
  OPBENCH_PMPI(MPI_Initialized, int (*)(int*));
  int initialized = 0, inter = 0;
  if (world == nullptr || PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized ||
      PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return 0;
  const int n = comm_size(comm);
  if (n <= 1) return 1;
  // (MPI_GROUP_NULL is a libmpi object too: whether each group was made is kept apart instead)
  MPI_Group group{}, world_group{};
  const bool have_group = PMPI_Comm_group(comm, &group) == MPI_SUCCESS;
  const bool have_world = PMPI_Comm_group(world, &world_group) == MPI_SUCCESS;
  std::vector<int> ranks(static_cast<std::size_t>(n)), in_world(ranks.size(), MPI_UNDEFINED);
  for (int i = 0; i < n; ++i)
    ranks[static_cast<std::size_t>(i)] = i;
  int stride = 0;
  if (have_group && have_world &&
      PMPI_Group_translate_ranks(group, n, ranks.data(), world_group, in_world.data()) ==
          MPI_SUCCESS &&
      std::find(in_world.begin(), in_world.end(), MPI_UNDEFINED) == in_world.end()) {
    // where the ranks lie, in any order (MPI_Comm_split's key may reverse them)
    std::sort(in_world.begin(), in_world.end());
    stride = static_cast<int>(even_spacing(in_world.begin(), in_world.end()));
  }
  if (have_group) PMPI_Group_free(&group);
  if (have_world) PMPI_Group_free(&world_group);
  return stride;
}

int comm_stride(MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Comm_create_keyval,
               int (*)(MPI_Comm_copy_attr_function*, MPI_Comm_delete_attr_function*, int*, void*));
  OPBENCH_PMPI(MPI_Comm_get_attr, int (*)(MPI_Comm, int, void*, int*));
  OPBENCH_PMPI(MPI_Comm_set_attr, int (*)(MPI_Comm, int, void*));
  static const int key = [&] {
    int k = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(&no_copy, &no_delete, &k, nullptr) != MPI_SUCCESS)
      return static_cast<int>(MPI_KEYVAL_INVALID);
    return k;
  }();
  if (key == MPI_KEYVAL_INVALID) return spacing(comm);
  void* kept = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, key, &kept, &found) == MPI_SUCCESS && found)
    return static_cast<int>(reinterpret_cast<std::intptr_t>(kept));
  const int stride = spacing(comm);
  PMPI_Comm_set_attr(comm, key, reinterpret_cast<void*>(static_cast<std::intptr_t>(stride)));
  return stride;
}

int type_size(MPI_Datatype t) {
  static std::atomic<void*> slot{nullptr};
  int s = 0;
  pmpi<int (*)(MPI_Datatype, int*)>(slot, "PMPI_Type_size")(t, &s);
  return s;
}

// opbench's dtype name of an MPI datatype, from the name MPI gives a predefined type; "other" for
// derived types (their bytes still come from MPI_Type_size).
const char* dtype_of(MPI_Datatype t) {
  static std::atomic<void*> slot{nullptr};
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  pmpi<int (*)(MPI_Datatype, char*, int*)>(slot, "PMPI_Type_get_name")(t, name, &len);
  static const std::pair<const char*, const char*> known[] = {
      {"MPI_FLOAT", "fp32"},          {"MPI_DOUBLE", "fp64"},
      {"MPI_INT", "int32"},           {"MPI_INT32_T", "int32"},
      {"MPI_INT64_T", "int64"},       {"MPI_LONG", "int64"},
      {"MPI_LONG_LONG", "int64"},     {"MPI_LONG_LONG_INT", "int64"},
      {"MPI_UNSIGNED", "uint32"},     {"MPI_UINT32_T", "uint32"},
      {"MPI_UINT64_T", "uint64"},     {"MPI_UNSIGNED_LONG", "uint64"},
      {"MPI_CHAR", "int8"},           {"MPI_SIGNED_CHAR", "int8"},
      {"MPI_INT8_T", "int8"},         {"MPI_BYTE", "uint8"},
      {"MPI_UNSIGNED_CHAR", "uint8"}, {"MPI_UINT8_T", "uint8"},
      {"MPI_SHORT", "int16"},         {"MPI_INT16_T", "int16"},
      {"MPI_C_BOOL", "bool"},         {"MPI_LONG_DOUBLE", "fp80"},
      {"MPI_UINT16_T", "uint16"},     {"MPI_UNSIGNED_SHORT", "uint16"}};
  for (const auto& [mpi, ours] : known)
    if (std::strcmp(name, mpi) == 0) return ours;
  return "other";
}

// The predefined reductions. MPI has no call that names an op, and Open MPI's MPI_SUM is the
// address of its global ompi_mpi_op_sum: looked up by name, so nothing here links libmpi.
const char* redop_of(MPI_Op op) {
  static const std::pair<const char*, const char*> known[] = {
      {"ompi_mpi_op_sum", "sum"},       {"ompi_mpi_op_prod", "prod"},
      {"ompi_mpi_op_min", "min"},       {"ompi_mpi_op_max", "max"},
      {"ompi_mpi_op_band", "band"},     {"ompi_mpi_op_bor", "bor"},
      {"ompi_mpi_op_bxor", "bxor"},     {"ompi_mpi_op_land", "land"},
      {"ompi_mpi_op_lor", "lor"},       {"ompi_mpi_op_lxor", "lxor"},
      {"ompi_mpi_op_maxloc", "maxloc"}, {"ompi_mpi_op_minloc", "minloc"}};
  static void* addresses[std::size(known)] = {};
  static std::once_flag once;
  std::call_once(once, [] {
    // RTLD_DEFAULT first: a program that uses MPI_SUM has a copy relocation of the object, and
    // that copy (in the executable, ahead of libmpi) is the address every caller passes.
    for (std::size_t i = 0; i < std::size(known); ++i) {
      addresses[i] = dlsym(RTLD_DEFAULT, known[i].first);
      if (addresses[i] == nullptr) addresses[i] = resolve_symbol(known[i].first);
    }
  });
  for (std::size_t i = 0; i < std::size(known); ++i)
    if (addresses[i] != nullptr && reinterpret_cast<void*>(op) == addresses[i])
      return known[i].second;
  return "other";
}

CaptureKey coll_key(const char* api, const char* kind, const char* op_name, CollOp op,
                    MPI_Datatype t, std::int64_t count, MPI_Comm comm, const char* redop) {
  CaptureKey key =
      collective_key(api, kind, op_name, op, dtype_of(t), static_cast<std::size_t>(type_size(t)),
                     count, comm_size(comm), redop);
  key.comm_stride = comm_stride(comm);
  return key;
}

CaptureKey coll_key(const char* api, CollOp op, MPI_Datatype t, std::int64_t count, MPI_Comm comm,
                    const char* redop = "") {
  const std::string_view name = coll_op_id(op);
  return coll_key(api, "collective", name.data(), op, t, count, comm, redop);
}

CaptureKey p2p_key(const char* api, const char* op_name, MPI_Datatype t, std::int64_t count,
                   MPI_Comm comm) {
  return coll_key(api, "p2p", op_name, CollOp::send_recv, t, count, comm, "");
}

// Where the result goes: in the send buffer (MPI_IN_PLACE) or another; bench_ccl replays each
// placement with the job's own time for it.
CaptureKey placed(CaptureKey key, bool in_place) {
  key.placement = in_place ? "in_place" : "out_of_place";
  return key;
}

std::int64_t sum(const int* counts, int n) {
  std::int64_t s = 0;
  for (int i = 0; i < n; ++i)
    s += counts[i];
  return s;
}

// A blocking call: time it, and record it when it succeeded.
template <class Call, class Key>
int timed(Call&& call, Key&& key) {
  if (!should_record()) return call();
  CallScope scope;
  const std::uint64_t t0 = now_ns();
  const int rc = call();
  const double ns = static_cast<double>(now_ns() - t0);
  if (rc == MPI_SUCCESS) record(key(), ns);
  return rc;
}

// ---- nonblocking requests in flight

struct Pending {
  CaptureKey key;
  std::uint64_t posted_ns = 0;
};

struct PendingRequests {
  std::mutex mutex;
  std::unordered_map<MPI_Request, Pending> requests;
};

PendingRequests& pending() {
  static PendingRequests* p = [] {
    auto* made = new PendingRequests();
    // A forked child has none of its parent's requests.
    pthread_atfork([] { pending().mutex.lock(); }, [] { pending().mutex.unlock(); },
                   [] {
                     PendingRequests& q = pending();
                     new (&q.mutex) std::mutex();
                     q.requests.clear();
                   });
    return made;
  }();
  return *p;
}

template <class Call, class Key>
int posted(Call&& call, MPI_Request* request, Key&& key) {
  if (!should_record()) return call();
  CallScope scope;
  const std::uint64_t t0 = now_ns();
  const int rc = call();
  if (rc != MPI_SUCCESS) return rc;
  Pending p{key(), t0};
  PendingRequests& q = pending();
  std::lock_guard<std::mutex> lock(q.mutex);
  auto [it, inserted] = q.requests.try_emplace(*request, p);
  if (!inserted) {  // the handle was reused: its earlier request completed out of our sight
    record_untimed(it->second.key, Untimed::completion_unseen);
    it->second = p;
  }
  return rc;
}

// The requests of `copies` that are now complete (indices), timed to now.
void completed(const MPI_Request* copies, const int* indices, int n_indices, bool untimed = false) {
  if (n_indices <= 0) return;
  const std::uint64_t t1 = now_ns();
  PendingRequests& q = pending();
  std::lock_guard<std::mutex> lock(q.mutex);
  for (int i = 0; i < n_indices; ++i) {
    auto it = q.requests.find(copies[indices ? indices[i] : i]);
    if (it == q.requests.end()) continue;
    if (untimed)
      record_untimed(it->second.key, Untimed::completion_unseen);
    else
      record(it->second.key, static_cast<double>(t1 - it->second.posted_ns));
    q.requests.erase(it);
  }
}

}  // namespace
}  // namespace opbench::capture

using namespace opbench::capture;
using opbench::CollOp;

// ---- blocking collectives

OPBENCH_CAPTURE_EXPORT int MPI_Allreduce(const void* s, void* r, int count, MPI_Datatype t,
                                         MPI_Op op, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Allreduce, int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm));
  return timed([&] { return PMPI_Allreduce(s, r, count, t, op, comm); },
               [&] {
                 return placed(
                     coll_key("MPI_Allreduce", CollOp::all_reduce, t, count, comm, redop_of(op)),
                     s == MPI_IN_PLACE);
               });
}

OPBENCH_CAPTURE_EXPORT int MPI_Allgather(const void* s, int scount, MPI_Datatype st, void* r,
                                         int rcount, MPI_Datatype rt, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Allgather,
               int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm));
  // In place (MPI_IN_PLACE) the send count is ignored: the receive count is the per-rank count.
  const bool in_place = s == MPI_IN_PLACE;
  return timed([&] { return PMPI_Allgather(s, scount, st, r, rcount, rt, comm); },
               [&] {
                 return placed(coll_key("MPI_Allgather", CollOp::all_gather, in_place ? rt : st,
                                        in_place ? rcount : scount, comm),
                               s == MPI_IN_PLACE);
               });
}

OPBENCH_CAPTURE_EXPORT int MPI_Reduce_scatter_block(const void* s, void* r, int rcount,
                                                    MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Reduce_scatter_block,
               int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm));
  return timed([&] { return PMPI_Reduce_scatter_block(s, r, rcount, t, op, comm); },
               [&] {
                 return placed(coll_key("MPI_Reduce_scatter_block", CollOp::reduce_scatter, t,
                                        rcount, comm, redop_of(op)),
                               s == MPI_IN_PLACE);
               });
}

OPBENCH_CAPTURE_EXPORT int MPI_Reduce_scatter(const void* s, void* r, const int rcounts[],
                                              MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Reduce_scatter,
               int (*)(const void*, void*, const int[], MPI_Datatype, MPI_Op, MPI_Comm));
  return timed([&] { return PMPI_Reduce_scatter(s, r, rcounts, t, op, comm); },
               [&] {
                 // count: this rank's share; bytes: the whole send buffer (Σ counts · size), which
                 // is nccl-tests' reduce_scatter bytes when the shares are equal
                 CaptureKey key = coll_key("MPI_Reduce_scatter", CollOp::reduce_scatter, t,
                                           rcounts[comm_rank(comm)], comm, redop_of(op));
                 key.bytes = sum(rcounts, key.comm_size) * type_size(t);
                 return placed(key, s == MPI_IN_PLACE);
               });
}

OPBENCH_CAPTURE_EXPORT int MPI_Alltoall(const void* s, int scount, MPI_Datatype st, void* r,
                                        int rcount, MPI_Datatype rt, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Alltoall,
               int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm));
  const bool in_place = s == MPI_IN_PLACE;
  return timed([&] { return PMPI_Alltoall(s, scount, st, r, rcount, rt, comm); },
               [&] {
                 return placed(coll_key("MPI_Alltoall", CollOp::all_to_all, in_place ? rt : st,
                                        in_place ? rcount : scount, comm),
                               s == MPI_IN_PLACE);
               });
}

OPBENCH_CAPTURE_EXPORT int MPI_Alltoallv(const void* s, const int scounts[], const int sdispls[],
                                         MPI_Datatype st, void* r, const int rcounts[],
                                         const int rdispls[], MPI_Datatype rt, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Alltoallv, int (*)(const void*, const int[], const int[], MPI_Datatype, void*,
                                      const int[], const int[], MPI_Datatype, MPI_Comm));
  const bool in_place = s == MPI_IN_PLACE;
  return timed(
      [&] { return PMPI_Alltoallv(s, scounts, sdispls, st, r, rcounts, rdispls, rt, comm); },
      [&] {
        // count and bytes: everything this rank sends (receives, in place), over all peers
        const int n = comm_size(comm);
        const std::int64_t total = sum(in_place ? rcounts : scounts, n);
        const MPI_Datatype t = in_place ? rt : st;
        CaptureKey key = coll_key("MPI_Alltoallv", CollOp::all_to_all, t, total, comm);
        key.bytes = total * type_size(t);
        return key;
      });
}

OPBENCH_CAPTURE_EXPORT int MPI_Bcast(void* buf, int count, MPI_Datatype t, int root,
                                     MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Bcast, int (*)(void*, int, MPI_Datatype, int, MPI_Comm));
  return timed([&] { return PMPI_Bcast(buf, count, t, root, comm); },
               [&] { return coll_key("MPI_Bcast", CollOp::broadcast, t, count, comm); });
}

OPBENCH_CAPTURE_EXPORT int MPI_Reduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op,
                                      int root, MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Reduce, int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, int, MPI_Comm));
  return timed([&] { return PMPI_Reduce(s, r, count, t, op, root, comm); },
               [&] {
                 return placed(coll_key("MPI_Reduce", CollOp::reduce, t, count, comm, redop_of(op)),
                               s == MPI_IN_PLACE);
               });
}

OPBENCH_CAPTURE_EXPORT int MPI_Barrier(MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Barrier, int (*)(MPI_Comm));
  return timed([&] { return PMPI_Barrier(comm); },
               [&] {
                 CaptureKey key;
                 key.api = "MPI_Barrier";
                 key.kind = "collective";
                 key.op = "barrier";
                 key.dtype = "none";
                 key.comm_size = comm_size(comm);
                 key.comm_stride = comm_stride(comm);
                 return key;
               });
}

// ---- point to point

OPBENCH_CAPTURE_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag,
                                    MPI_Comm comm) {
  OPBENCH_PMPI(MPI_Send, int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm));
  return timed([&] { return PMPI_Send(buf, count, t, dest, tag, comm); },
               [&] { return p2p_key("MPI_Send", "send", t, count, comm); });
}

OPBENCH_CAPTURE_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype t, int source, int tag,
                                    MPI_Comm comm, MPI_Status* status) {
  OPBENCH_PMPI(MPI_Recv, int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*));
  // count: the receive buffer's capacity, the argument (what arrived may be less)
  return timed([&] { return PMPI_Recv(buf, count, t, source, tag, comm, status); },
               [&] { return p2p_key("MPI_Recv", "recv", t, count, comm); });
}

OPBENCH_CAPTURE_EXPORT int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype st, int dest,
                                        int stag, void* rbuf, int rcount, MPI_Datatype rt,
                                        int source, int rtag, MPI_Comm comm, MPI_Status* status) {
  OPBENCH_PMPI(MPI_Sendrecv, int (*)(const void*, int, MPI_Datatype, int, int, void*, int,
                                     MPI_Datatype, int, int, MPI_Comm, MPI_Status*));
  return timed(
      [&] {
        return PMPI_Sendrecv(sbuf, scount, st, dest, stag, rbuf, rcount, rt, source, rtag, comm,
                             status);
      },
      [&] { return p2p_key("MPI_Sendrecv", "send_recv", st, scount, comm); });
}

OPBENCH_CAPTURE_EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype t, int dest, int tag,
                                     MPI_Comm comm, MPI_Request* req) {
  OPBENCH_PMPI(MPI_Isend,
               int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*));
  return posted([&] { return PMPI_Isend(buf, count, t, dest, tag, comm, req); }, req,
                [&] { return p2p_key("MPI_Isend", "send", t, count, comm); });
}

OPBENCH_CAPTURE_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype t, int source, int tag,
                                     MPI_Comm comm, MPI_Request* req) {
  OPBENCH_PMPI(MPI_Irecv, int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*));
  return posted([&] { return PMPI_Irecv(buf, count, t, source, tag, comm, req); }, req,
                [&] { return p2p_key("MPI_Irecv", "recv", t, count, comm); });
}

// ---- nonblocking collectives

OPBENCH_CAPTURE_EXPORT int MPI_Iallreduce(const void* s, void* r, int count, MPI_Datatype t,
                                          MPI_Op op, MPI_Comm comm, MPI_Request* req) {
  OPBENCH_PMPI(MPI_Iallreduce,
               int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request*));
  return posted([&] { return PMPI_Iallreduce(s, r, count, t, op, comm, req); }, req,
                [&] {
                  return placed(
                      coll_key("MPI_Iallreduce", CollOp::all_reduce, t, count, comm, redop_of(op)),
                      s == MPI_IN_PLACE);
                });
}

OPBENCH_CAPTURE_EXPORT int MPI_Iallgather(const void* s, int scount, MPI_Datatype st, void* r,
                                          int rcount, MPI_Datatype rt, MPI_Comm comm,
                                          MPI_Request* req) {
  OPBENCH_PMPI(MPI_Iallgather, int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype,
                                       MPI_Comm, MPI_Request*));
  const bool in_place = s == MPI_IN_PLACE;
  return posted([&] { return PMPI_Iallgather(s, scount, st, r, rcount, rt, comm, req); }, req,
                [&] {
                  return placed(coll_key("MPI_Iallgather", CollOp::all_gather, in_place ? rt : st,
                                         in_place ? rcount : scount, comm),
                                s == MPI_IN_PLACE);
                });
}

OPBENCH_CAPTURE_EXPORT int MPI_Ireduce_scatter_block(const void* s, void* r, int rcount,
                                                     MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                                                     MPI_Request* req) {
  OPBENCH_PMPI(MPI_Ireduce_scatter_block,
               int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request*));
  return posted([&] { return PMPI_Ireduce_scatter_block(s, r, rcount, t, op, comm, req); }, req,
                [&] {
                  return placed(coll_key("MPI_Ireduce_scatter_block", CollOp::reduce_scatter, t,
                                         rcount, comm, redop_of(op)),
                                s == MPI_IN_PLACE);
                });
}

OPBENCH_CAPTURE_EXPORT int MPI_Ialltoall(const void* s, int scount, MPI_Datatype st, void* r,
                                         int rcount, MPI_Datatype rt, MPI_Comm comm,
                                         MPI_Request* req) {
  OPBENCH_PMPI(MPI_Ialltoall, int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype,
                                      MPI_Comm, MPI_Request*));
  const bool in_place = s == MPI_IN_PLACE;
  return posted([&] { return PMPI_Ialltoall(s, scount, st, r, rcount, rt, comm, req); }, req,
                [&] {
                  return placed(coll_key("MPI_Ialltoall", CollOp::all_to_all, in_place ? rt : st,
                                         in_place ? rcount : scount, comm),
                                s == MPI_IN_PLACE);
                });
}

OPBENCH_CAPTURE_EXPORT int MPI_Ibcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm comm,
                                      MPI_Request* req) {
  OPBENCH_PMPI(MPI_Ibcast, int (*)(void*, int, MPI_Datatype, int, MPI_Comm, MPI_Request*));
  return posted([&] { return PMPI_Ibcast(buf, count, t, root, comm, req); }, req,
                [&] { return coll_key("MPI_Ibcast", CollOp::broadcast, t, count, comm); });
}

OPBENCH_CAPTURE_EXPORT int MPI_Ireduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op,
                                       int root, MPI_Comm comm, MPI_Request* req) {
  OPBENCH_PMPI(MPI_Ireduce,
               int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, int, MPI_Comm, MPI_Request*));
  return posted([&] { return PMPI_Ireduce(s, r, count, t, op, root, comm, req); }, req,
                [&] {
                  return placed(
                      coll_key("MPI_Ireduce", CollOp::reduce, t, count, comm, redop_of(op)),
                      s == MPI_IN_PLACE);
                });
}

// ---- completion: the requests are copied before the call, which may null them

namespace {
template <class Call>
int complete_one(MPI_Request* req, Call&& call, bool* done_flag) {
  if (t_depth > 0) return call();
  const MPI_Request copy = *req;
  CallScope scope;
  const int rc = call();
  if (rc == MPI_SUCCESS && (done_flag == nullptr || *done_flag)) completed(&copy, nullptr, 1);
  return rc;
}
}  // namespace

OPBENCH_CAPTURE_EXPORT int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  OPBENCH_PMPI(MPI_Wait, int (*)(MPI_Request*, MPI_Status*));
  return complete_one(
      req, [&] { return PMPI_Wait(req, status); }, nullptr);
}

OPBENCH_CAPTURE_EXPORT int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  OPBENCH_PMPI(MPI_Test, int (*)(MPI_Request*, int*, MPI_Status*));
  bool done = false;
  return complete_one(
      req,
      [&] {
        const int rc = PMPI_Test(req, flag, status);
        done = *flag != 0;
        return rc;
      },
      &done);
}

OPBENCH_CAPTURE_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  OPBENCH_PMPI(MPI_Waitall, int (*)(int, MPI_Request[], MPI_Status[]));
  if (t_depth > 0 || n <= 0) return PMPI_Waitall(n, reqs, statuses);
  const std::vector<MPI_Request> copies(reqs, reqs + n);
  CallScope scope;
  const int rc = PMPI_Waitall(n, reqs, statuses);
  if (rc == MPI_SUCCESS) completed(copies.data(), nullptr, n);
  return rc;
}

OPBENCH_CAPTURE_EXPORT int MPI_Testall(int n, MPI_Request reqs[], int* flag,
                                       MPI_Status statuses[]) {
  OPBENCH_PMPI(MPI_Testall, int (*)(int, MPI_Request[], int*, MPI_Status[]));
  if (t_depth > 0 || n <= 0) return PMPI_Testall(n, reqs, flag, statuses);
  const std::vector<MPI_Request> copies(reqs, reqs + n);
  CallScope scope;
  const int rc = PMPI_Testall(n, reqs, flag, statuses);
  if (rc == MPI_SUCCESS && *flag) completed(copies.data(), nullptr, n);
  return rc;
}

OPBENCH_CAPTURE_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int* index, MPI_Status* status) {
  OPBENCH_PMPI(MPI_Waitany, int (*)(int, MPI_Request[], int*, MPI_Status*));
  if (t_depth > 0 || n <= 0) return PMPI_Waitany(n, reqs, index, status);
  const std::vector<MPI_Request> copies(reqs, reqs + n);
  CallScope scope;
  const int rc = PMPI_Waitany(n, reqs, index, status);
  if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) completed(copies.data(), index, 1);
  return rc;
}

OPBENCH_CAPTURE_EXPORT int MPI_Testany(int n, MPI_Request reqs[], int* index, int* flag,
                                       MPI_Status* status) {
  OPBENCH_PMPI(MPI_Testany, int (*)(int, MPI_Request[], int*, int*, MPI_Status*));
  if (t_depth > 0 || n <= 0) return PMPI_Testany(n, reqs, index, flag, status);
  const std::vector<MPI_Request> copies(reqs, reqs + n);
  CallScope scope;
  const int rc = PMPI_Testany(n, reqs, index, flag, status);
  if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) completed(copies.data(), index, 1);
  return rc;
}

OPBENCH_CAPTURE_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int* outcount, int indices[],
                                        MPI_Status statuses[]) {
  OPBENCH_PMPI(MPI_Waitsome, int (*)(int, MPI_Request[], int*, int[], MPI_Status[]));
  if (t_depth > 0 || n <= 0) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  const std::vector<MPI_Request> copies(reqs, reqs + n);
  CallScope scope;
  const int rc = PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED) completed(copies.data(), indices, *outcount);
  return rc;
}

OPBENCH_CAPTURE_EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int* outcount, int indices[],
                                        MPI_Status statuses[]) {
  OPBENCH_PMPI(MPI_Testsome, int (*)(int, MPI_Request[], int*, int[], MPI_Status[]));
  if (t_depth > 0 || n <= 0) return PMPI_Testsome(n, reqs, outcount, indices, statuses);
  const std::vector<MPI_Request> copies(reqs, reqs + n);
  CallScope scope;
  const int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
  if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED) completed(copies.data(), indices, *outcount);
  return rc;
}

OPBENCH_CAPTURE_EXPORT int MPI_Request_free(MPI_Request* req) {
  OPBENCH_PMPI(MPI_Request_free, int (*)(MPI_Request*));
  if (t_depth > 0) return PMPI_Request_free(req);
  const MPI_Request copy = *req;
  CallScope scope;
  const int rc = PMPI_Request_free(req);
  // freed requests complete out of sight: counted, without a time
  if (rc == MPI_SUCCESS) completed(&copy, nullptr, 1, true);
  return rc;
}
