#include "capture/nccl_comms.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "capture/runtime.hpp"

namespace opbench::capture {
namespace {

struct Known {
  std::uint64_t id = 0;
  // Its splits and shrinks so far, counted apart: every member of the parent calls a split, but
  // the ranks a shrink leaves out do not call it.
  std::uint64_t splits = 0, shrinks = 0;
};

// A split's child whose handle NCCL writes only once the split is done: a nonblocking split
// (ncclInProgress), or one made inside ncclGroupStart/End (NCCL's init.cc: "*newcomm should be
// NCCL_COMM_NULL until comm split fully complete"). Taken in once the handle is there.
struct PendingChild {
  ncclComm_t* handle;
  std::uint64_t id;
};

// Made on first use and never destroyed: hooks run during exit too (runtime.hpp).
struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<ncclComm_t, Known> comms;
  std::vector<PendingChild> pending;
  std::atomic<std::size_t> pending_count{0};  // read without the lock on the hot paths
};
Registry& registry() {
  static Registry* r = [] {
    auto* made = new Registry;
    // A forked child has none of its parent's communicators (CUDA does not work across fork),
    // and the lock another thread held at fork() would never be released in it.
    pthread_atfork([] { registry().mutex.lock(); }, [] { registry().mutex.unlock(); },
                   [] {
                     Registry& q = registry();
                     new (&q.mutex) std::shared_mutex();
                     q.comms.clear();
                     q.pending.clear();
                     q.pending_count = 0;
                   });
    return made;
  }();
  return *r;
}

// What a call that makes a communicator returns when it made one: a nonblocking communicator's
// ncclInProgress too.
bool made(ncclResult_t rc) {
  return rc == ncclSuccess || rc == ncclInProgress;
}

// FNV-1a, 64 bits: the same bytes give the same number in every process.
std::uint64_t fnv(const void* data, std::size_t n, std::uint64_t h = 14695981039346656037ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}
std::uint64_t fnv_value(std::uint64_t v, std::uint64_t h) {
  return fnv(&v, sizeof v, h);
}
std::uint64_t nonzero(std::uint64_t h) {
  return h == 0 ? 1 : h;  // 0 means "not known"
}

// A communicator made from unique ids. The size is mixed in: with NCCL_COMM_ID set, every id a
// job draws is the same bytes, and then only communicators of the same size share a number.
std::uint64_t id_of(const void* ids, std::size_t bytes, int nranks) {
  return nonzero(fnv_value(static_cast<std::uint64_t>(nranks), fnv(ids, bytes)));
}

void remember(ncclComm_t comm, std::uint64_t id) {
  if (comm == nullptr || id == 0) return;
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.comms[comm] = Known{id, 0, 0};
}

// The number of `parent`'s next split (`shrink` false) or shrink, told apart by `what` (the
// color, the ranks left out); 0 when the parent is not known. Counts the child whether or not
// this rank joins it.
std::uint64_t child_id(ncclComm_t parent, bool shrink, std::uint64_t what) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  const auto it = r.comms.find(parent);
  if (it == r.comms.end()) return 0;
  const std::uint64_t nth = shrink ? it->second.shrinks++ : it->second.splits++;
  const std::uint64_t kind = shrink ? 2 : 1;
  return nonzero(fnv_value(what, fnv_value(nth, fnv_value(kind, it->second.id))));
}

// A split's or shrink's child: now where NCCL gave the handle, else once it does.
void remember_child(ncclResult_t rc, ncclComm_t* handle, std::uint64_t id) {
  if (!made(rc) || handle == nullptr || id == 0) return;
  if (*handle != nullptr) {
    remember(*handle, id);
    return;
  }
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.pending.push_back({handle, id});
  r.pending_count = r.pending.size();
}

void forget(ncclComm_t comm) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.comms.erase(comm);
}

}  // namespace

std::uint64_t nccl_comm_id(ncclComm_t comm) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  const auto it = r.comms.find(comm);
  return it == r.comms.end() ? 0 : it->second.id;
}

void nccl_take_finished_children() {
  Registry& r = registry();
  if (r.pending_count.load(std::memory_order_relaxed) == 0) return;
  std::unique_lock lock(r.mutex);
  for (auto it = r.pending.begin(); it != r.pending.end();) {
    if (*it->handle == nullptr) {
      ++it;
      continue;
    }
    r.comms[*it->handle] = Known{it->id, 0, 0};
    it = r.pending.erase(it);
  }
  r.pending_count = r.pending.size();
}

}  // namespace opbench::capture

using namespace opbench::capture;

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                     int rank) {
  OPBENCH_REAL_FN(ncclCommInitRank, ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int));
  const ncclResult_t rc = real_ncclCommInitRank(comm, nranks, id, rank);
  // InitRank writes the handle before it returns, ncclInProgress or not (init.cc)
  if (made(rc) && enabled()) remember(*comm, id_of(&id, sizeof id, nranks));
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                           ncclUniqueId id, int rank,
                                                           ncclConfig_t* config) {
  OPBENCH_REAL_FN(ncclCommInitRankConfig,
                  ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*));
  const ncclResult_t rc = real_ncclCommInitRankConfig(comm, nranks, id, rank, config);
  if (made(rc) && enabled()) remember(*comm, id_of(&id, sizeof id, nranks));
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks,
                                                             int myrank, int nId,
                                                             ncclUniqueId* commIds,
                                                             ncclConfig_t* config) {
  OPBENCH_REAL_FN(ncclCommInitRankScalable,
                  ncclResult_t(*)(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*));
  const ncclResult_t rc = real_ncclCommInitRankScalable(comm, nranks, myrank, nId, commIds, config);
  // every member passes the same ids, in the same order (nccl.h)
  if (made(rc) && enabled() && nId > 0 && commIds != nullptr)
    remember(*comm, id_of(commIds, sizeof(ncclUniqueId) * static_cast<std::size_t>(nId), nranks));
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                                  ncclComm_t* newcomm, ncclConfig_t* config) {
  OPBENCH_REAL_FN(ncclCommSplit, ncclResult_t(*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*));
  // counted before the call, in every member of the parent, NCCL_SPLIT_NOCOLOR's too
  const std::uint64_t id = enabled() ? child_id(comm, false, static_cast<std::uint64_t>(color)) : 0;
  const ncclResult_t rc = real_ncclCommSplit(comm, color, key, newcomm, config);
  if (color != NCCL_SPLIT_NOCOLOR) remember_child(rc, newcomm, id);
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                                   int excludeRanksCount, ncclComm_t* newcomm,
                                                   ncclConfig_t* config, int shrinkFlags) {
  OPBENCH_REAL_FN(ncclCommShrink,
                  ncclResult_t(*)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int));
  // the ranks left out, in order: every member names the same ones, not always in the same order
  std::vector<int> left_out;
  if (excludeRanksList != nullptr && excludeRanksCount > 0)
    left_out.assign(excludeRanksList, excludeRanksList + excludeRanksCount);
  std::sort(left_out.begin(), left_out.end());
  const std::uint64_t id =
      enabled() ? child_id(comm, true, fnv(left_out.data(), sizeof(int) * left_out.size())) : 0;
  const ncclResult_t rc =
      real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  remember_child(rc, newcomm, id);
  return rc;
}

// A nonblocking communicator's work, a split's among it, is done when this says ncclSuccess.
OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                                          ncclResult_t* asyncError) {
  OPBENCH_REAL_FN(ncclCommGetAsyncError, ncclResult_t(*)(ncclComm_t, ncclResult_t*));
  const ncclResult_t rc = real_ncclCommGetAsyncError(comm, asyncError);
  nccl_take_finished_children();
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  OPBENCH_REAL_FN(ncclCommDestroy, ncclResult_t(*)(ncclComm_t));
  forget(comm);  // a communicator made later may get the same handle
  return real_ncclCommDestroy(comm);
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  OPBENCH_REAL_FN(ncclCommAbort, ncclResult_t(*)(ncclComm_t));
  forget(comm);
  return real_ncclCommAbort(comm);
}
