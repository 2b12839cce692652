#include "capture/nccl_comms.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "capture/runtime.hpp"

namespace opbench::capture {
namespace {

struct Known {
  std::uint64_t id = 0;
  std::uint64_t children = 0;  // splits and shrinks of it so far
};

// Made on first use and never destroyed: hooks run during exit too (runtime.hpp).
struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<ncclComm_t, Known> comms;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
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

void remember(ncclComm_t comm, std::uint64_t id) {
  if (comm == nullptr || id == 0) return;
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.comms[comm] = Known{id, 0};
}

// The number of `parent`'s next child, told apart by `what` (the color, the ranks left out); 0
// when the parent is not known. Counts the child whether or not this rank joins it.
std::uint64_t child_id(ncclComm_t parent, std::uint64_t what) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  const auto it = r.comms.find(parent);
  if (it == r.comms.end()) return 0;
  const std::uint64_t nth = it->second.children++;
  return nonzero(fnv_value(what, fnv_value(nth, it->second.id)));
}

void forget(ncclComm_t comm) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.comms.erase(comm);
}

bool made(ncclResult_t rc) {
  return rc == ncclSuccess || rc == ncclInProgress;  // nonblocking: the handle is valid already
}

}  // namespace

std::uint64_t nccl_comm_id(ncclComm_t comm) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  const auto it = r.comms.find(comm);
  return it == r.comms.end() ? 0 : it->second.id;
}

}  // namespace opbench::capture

using namespace opbench::capture;

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                     int rank) {
  OPBENCH_REAL_FN(ncclCommInitRank, ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int));
  const ncclResult_t rc = real_ncclCommInitRank(comm, nranks, id, rank);
  if (made(rc) && enabled()) remember(*comm, nonzero(fnv(&id, sizeof id)));
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                           ncclUniqueId id, int rank,
                                                           ncclConfig_t* config) {
  OPBENCH_REAL_FN(ncclCommInitRankConfig,
                  ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*));
  const ncclResult_t rc = real_ncclCommInitRankConfig(comm, nranks, id, rank, config);
  if (made(rc) && enabled()) remember(*comm, nonzero(fnv(&id, sizeof id)));
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks,
                                                             int myrank, int nId,
                                                             ncclUniqueId* commIds,
                                                             ncclConfig_t* config) {
  OPBENCH_REAL_FN(ncclCommInitRankScalable,
                  ncclResult_t(*)(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*));
  const ncclResult_t rc = real_ncclCommInitRankScalable(comm, nranks, myrank, nId, commIds, config);
  // every member passes the same ids
  if (made(rc) && enabled() && nId > 0 && commIds != nullptr)
    remember(*comm, nonzero(fnv(commIds, sizeof(ncclUniqueId) * static_cast<std::size_t>(nId))));
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                                  ncclComm_t* newcomm, ncclConfig_t* config) {
  OPBENCH_REAL_FN(ncclCommSplit, ncclResult_t(*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*));
  // counted before the call, in every member of the parent, NCCL_SPLIT_NOCOLOR's too
  const std::uint64_t id = enabled() ? child_id(comm, static_cast<std::uint64_t>(color)) : 0;
  const ncclResult_t rc = real_ncclCommSplit(comm, color, key, newcomm, config);
  if (made(rc) && newcomm != nullptr) remember(*newcomm, id);
  return rc;
}

OPBENCH_CAPTURE_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                                   int excludeRanksCount, ncclComm_t* newcomm,
                                                   ncclConfig_t* config, int shrinkFlags) {
  OPBENCH_REAL_FN(ncclCommShrink,
                  ncclResult_t(*)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int));
  // the members left out, as every member passes them; ~0 keeps a shrink apart from a split
  const std::uint64_t left_out =
      excludeRanksList != nullptr && excludeRanksCount > 0
          ? fnv(excludeRanksList, sizeof(int) * static_cast<std::size_t>(excludeRanksCount))
          : 0;
  const std::uint64_t id = enabled() ? child_id(comm, ~left_out) : 0;
  const ncclResult_t rc =
      real_ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  if (made(rc) && newcomm != nullptr) remember(*newcomm, id);
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
