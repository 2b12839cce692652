// A stand-in for cuBLAS, cuBLASLt's cublasLtMatmul, NCCL and the few CUDA driver calls the
// capture makes, for testing the capture's GPU hooks on a machine without a GPU (test-only: never
// built into the product). It behaves as a GPU does where the capture depends on it: every "GPU
// operation" is queued on one device timeline that runs behind the host (kStandinUs microseconds
// each, or standin_set_op_us's) and the call returns at once; an event completes when the
// timeline reaches it, and cuEventElapsedTime is the timeline's time between two events. It also
// has the driver's stream capture (a graph capture in global or relaxed mode, which a query from
// a thread not in relaxed mode invalidates), a cuStreamIsCapturing that can fail, an NCCL
// nonblocking communicator (ncclInProgress), a second communicator (another GPU of the process),
// communicators made, split (blocking, or nonblocking with the handle written later) and shrunk,
// an operation that never ends (a hung kernel), a driver that refuses a forked child (CUDA cannot
// be used after fork: it says so on stderr), a driver shut down at exit by an exit handler
// registered at the first driver call, as the CUDA runtime's is at its initialisation (every call
// after it returns CUDA_ERROR_DEINITIALIZED), a cudaDeviceReset that kills every event made before
// it (the driver refuses their handles) and threads that cannot be made (pthread_create's EAGAIN
// at a container's pids limit).
// It exports the real libraries' symbols with their real signatures (the toolkit's headers
// declare them), which is all the capture sees of them.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

namespace {
constexpr std::int64_t kStandinUs = 300;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
// the driver's codes (cuda.h)
constexpr int kNotReady = 600;
constexpr int kCaptureUnsupported = 900;
constexpr int kCaptureInvalidated = 901;
constexpr int kCaptureImplicit = 906;
constexpr int kModeRelaxed = 2;

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The device: one timeline for every stream (enough for the capture, which times each call on
// its own stream).
struct Device {
  std::mutex mutex;
  std::int64_t busy_until = 0;  // when the queued work ends (kNever: a hung operation)
  std::int64_t op_ns = kStandinUs * 1000;
  bool capturing = false;  // a graph capture is open: operations are recorded, not run
  bool capture_global = false;
  bool capture_invalidated = false;
  bool capture_status_fails = false;
  bool exchange_mode_fails = false;  // cuThreadExchangeStreamCaptureMode returns an error
  int generation = 0;  // cudaDeviceReset's count: the events of an earlier one are dead
};
Device& device() {
  static Device* d = new Device();
  return *d;
}

// Queues one operation and returns at once, as a kernel launch does.
void work() {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (d.capturing || d.busy_until == kNever) return;
  const std::int64_t start = std::max(now_ns(), d.busy_until);
  d.busy_until = start + d.op_ns;
}

thread_local int t_capture_mode = 0;  // CU_STREAM_CAPTURE_MODE_GLOBAL, every thread's default

// A potentially unsafe call (an event query) from this thread: under a global-mode capture it is
// refused and invalidates the capture unless the thread is relaxed (CUDA Driver API,
// cuThreadExchangeStreamCaptureMode).
bool unsafe_call_allowed(Device& d) {
  if (!d.capturing || !d.capture_global || t_capture_mode == kModeRelaxed) return true;
  d.capture_invalidated = true;
  return false;
}

struct FakeEvent {
  std::int64_t at = 0;  // when the timeline reaches it
  int generation = 0;   // the device's when it was made
};
constexpr int kInvalidHandle = 400;  // CUDA_ERROR_INVALID_HANDLE
// An event made before the last cudaDeviceReset (device mutex held).
// Each call given one counts: a real driver's use of a dead handle is undefined, so the capture
// should make as few as it can.
std::atomic<long> g_dead_calls{0};
bool dead(const Device& d, const void* e) {
  const bool is = static_cast<const FakeEvent*>(e)->generation != d.generation;
  if (is) ++g_dead_calls;
  return is;
}
int fake_context = 1;
int fake_handle = 2;
int fake_comm = 3;
int fake_nonblocking_comm = 4;
int fake_second_comm = 5;

// The process the stand-in was loaded in: a driver call from a forked child is refused, as the
// real driver's state is not valid after fork, and said on stderr so that a test can see it.
const pid_t g_loaded_in = getpid();
bool forked_child(const char* call) {
  if (getpid() == g_loaded_in) return false;
  std::fprintf(stderr, "stand-in: %s called in a forked child\n", call);
  return true;
}
constexpr int kNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED
constexpr int kDeinitialized = 4;   // CUDA_ERROR_DEINITIALIZED

// The driver shut down by the exit handler the first driver call registers.
std::atomic<bool> g_shut_down{false};
bool shut_down() {
  static const bool registered = [] {
    std::atexit([] { g_shut_down = true; });
    return true;
  }();
  (void)registered;
  return g_shut_down;
}
}  // namespace

#define STANDIN extern "C" __attribute__((visibility("default")))

// ---- the test program's controls
STANDIN void standin_set_op_us(int us) {
  std::lock_guard<std::mutex> lock(device().mutex);
  device().op_ns = static_cast<std::int64_t>(us) * 1000;
}
// How far the device runs behind the host now (ms): near 0 when the host waited for it.
STANDIN double standin_lag_ms() {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  return d.busy_until == kNever ? -1.0 : static_cast<double>(d.busy_until - now_ns()) / 1e6;
}
// An operation that never ends: everything queued after it waits forever.
STANDIN void standin_hang() {
  std::lock_guard<std::mutex> lock(device().mutex);
  device().busy_until = kNever;
}
STANDIN void standin_begin_capture(int global_mode) {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.capturing = true;
  d.capture_global = global_mode != 0;
  d.capture_invalidated = false;
}
// 0, or CUDA_ERROR_STREAM_CAPTURE_INVALIDATED when an unsafe call broke the capture.
STANDIN int standin_end_capture() {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.capturing = false;
  return d.capture_invalidated ? kCaptureInvalidated : 0;
}
STANDIN void standin_capture_status_fails(int fails) {
  std::lock_guard<std::mutex> lock(device().mutex);
  device().capture_status_fails = fails != 0;
}

// pthread_create fails with EAGAIN while set (found before libc's: the program links the
// stand-in first).
std::atomic<bool> g_threads_fail{false};
STANDIN void standin_threads_fail(int fails) {
  g_threads_fail = fails != 0;
}
STANDIN int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                           void* arg) {
  if (g_threads_fail) return EAGAIN;
  using Real = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "pthread_create"));
  return real(thread, attr, fn, arg);
}

// ---- CUDA driver
STANDIN int cuCtxGetCurrent(void** ctx) {
  if (forked_child("cuCtxGetCurrent")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  *ctx = &fake_context;
  return 0;
}
// A context's id (cuCtxGetId), new after each cudaDeviceReset as a re-made context's is. Built
// with OPBENCH_STANDIN_NO_CONTEXT_IDS, the library lacks the symbol, as a driver before CUDA 12.0
// does.
#ifndef OPBENCH_STANDIN_NO_CONTEXT_IDS
STANDIN int cuCtxGetId(void*, unsigned long long* id) {
  if (forked_child("cuCtxGetId")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  *id = 1000 + static_cast<unsigned long long>(d.generation);
  return 0;
}
#endif
STANDIN int cuCtxSetCurrent(void*) {
  if (forked_child("cuCtxSetCurrent")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  return 0;
}
std::atomic<long> g_creates{0};
STANDIN long standin_event_creates() {
  return g_creates.load();
}
STANDIN int cuEventCreate(void** e, unsigned) {
  if (forked_child("cuEventCreate")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  ++g_creates;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  *e = new FakeEvent{0, d.generation};
  return 0;
}
STANDIN long standin_dead_handle_calls() {
  return g_dead_calls.load();
}
std::atomic<long> g_destroys{0};
STANDIN long standin_event_destroys() {
  return g_destroys.load();
}
// A dead event's handle is refused, as the driver refuses a handle it no longer knows (its
// memory is kept: the stand-in cannot tell a dead handle from a reused one).
STANDIN int cuEventDestroy_v2(void* e) {
  if (forked_child("cuEventDestroy_v2")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (dead(d, e)) return kInvalidHandle;
  ++g_destroys;
  delete static_cast<FakeEvent*>(e);
  return 0;
}
// The runtime's cudaDeviceReset: the device's work dropped and its events dead. The context keeps
// its handle (&fake_context), as a new primary context may: the capture's pool of that context
// then holds dead events.
STANDIN cudaError_t cudaDeviceReset() {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  ++d.generation;
  d.busy_until = 0;
  return cudaSuccess;
}
std::atomic<long> g_records{0};
STANDIN long standin_event_records() {
  return g_records.load();
}
STANDIN int cuEventRecord(void* e, void*) {
  if (forked_child("cuEventRecord")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  ++g_records;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (dead(d, e)) return kInvalidHandle;
  static_cast<FakeEvent*>(e)->at =
      d.busy_until == kNever ? kNever : std::max(now_ns(), d.busy_until);
  return 0;
}
std::atomic<long> g_queries{0};
STANDIN long standin_queries() {
  return g_queries.load();
}
STANDIN int cuEventQuery(void* e) {
  if (forked_child("cuEventQuery")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  ++g_queries;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!unsafe_call_allowed(d)) return kCaptureUnsupported;
  if (dead(d, e)) return kInvalidHandle;
  return now_ns() >= static_cast<FakeEvent*>(e)->at ? 0 : kNotReady;
}
STANDIN int cuEventElapsedTime_v2(float* ms, void* a, void* b) {
  if (forked_child("cuEventElapsedTime_v2")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!unsafe_call_allowed(d)) return kCaptureUnsupported;
  if (dead(d, a) || dead(d, b)) return kInvalidHandle;
  const std::int64_t t0 = static_cast<FakeEvent*>(a)->at, t1 = static_cast<FakeEvent*>(b)->at;
  if (now_ns() < t1) return kNotReady;
  *ms = static_cast<float>(static_cast<double>(t1 - t0) / 1e6);
  return 0;
}
STANDIN int cuStreamIsCapturing(void*, int* status) {
  if (forked_child("cuStreamIsCapturing")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (d.capture_status_fails) return kCaptureImplicit;
  *status = d.capturing ? 1 : 0;  // CU_STREAM_CAPTURE_STATUS_ACTIVE : _NONE
  return 0;
}
STANDIN void standin_exchange_mode_fails(int fails) {
  std::lock_guard<std::mutex> lock(device().mutex);
  device().exchange_mode_fails = fails != 0;
}
STANDIN int cuThreadExchangeStreamCaptureMode(int* mode) {
  if (forked_child("cuThreadExchangeStreamCaptureMode")) return kNotInitialized;
  if (shut_down()) return kDeinitialized;
  {
    std::lock_guard<std::mutex> lock(device().mutex);
    if (device().exchange_mode_fails) return 1;  // CUDA_ERROR_INVALID_VALUE
  }
  const int old = t_capture_mode;
  t_capture_mode = *mode;
  *mode = old;
  return 0;
}

// ---- cuBLAS
STANDIN cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = reinterpret_cast<cublasHandle_t>(&fake_handle);
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasGetStream_v2(cublasHandle_t, cudaStream_t* s) {
  *s = nullptr;
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const float*, const float*, int, const float*, int,
                                      const float*, float*, int) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const __half*, const __half*, int, const __half*, int,
                                   const __half*, __half*, int) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
// As the real cuBLAS does for many GEMMs, GemmEx runs cublasLtMatmul inside (through the
// dynamic symbol, so the capture's hook sees it, nested).
STANDIN cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t) {
  return cublasLtMatmul(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr);
}
STANDIN cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
    void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasGemmBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void* const[],
                                           cudaDataType, int, const void* const[], cudaDataType,
                                           int, const void*, void* const[], cudaDataType, int, int,
                                           cublasComputeType_t, cublasGemmAlgo_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t, const cublasOperation_t[], const cublasOperation_t[], const int[], const int[],
    const int[], const void*, const void* const[], cudaDataType_t, const int[], const void* const[],
    cudaDataType_t, const int[], const void*, void* const[], cudaDataType_t, const int[], int,
    const int[], cublasComputeType_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
// cuBLASLt: only the matmul is stood in; the descriptors are the real library's.
STANDIN cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*,
                                      const void*, cublasLtMatrixLayout_t, const void*,
                                      cublasLtMatrixLayout_t, const void*, const void*,
                                      cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                      const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}

// ---- NCCL: the fixed communicators above, of 4 ranks (this process rank 1); and those made
// with ncclCommInitRank, of its nranks and rank, and by ncclCommSplit, which one process alone
// cannot know the members of: a split here is the one the tests make, colors rank % 2, so half
// the parent's ranks, this process the parent rank / 2 of its half.
struct MadeComm {
  int nranks, rank;
};
std::mutex made_mutex;
std::vector<MadeComm*> made_comms;
const MadeComm* made_comm(const ncclComm_t comm) {
  std::lock_guard lock(made_mutex);
  for (const MadeComm* m : made_comms)
    if (reinterpret_cast<const void*>(m) == reinterpret_cast<const void*>(comm)) return m;
  return nullptr;
}
ncclComm_t make_comm(int nranks, int rank) {
  std::lock_guard lock(made_mutex);
  made_comms.push_back(new MadeComm{nranks, rank});
  return reinterpret_cast<ncclComm_t>(made_comms.back());
}
STANDIN ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  *comm = make_comm(nranks, rank);
  return ncclSuccess;
}
STANDIN ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank,
                                            ncclConfig_t*) {
  *comm = make_comm(nranks, rank);
  return ncclSuccess;
}
STANDIN ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int,
                                              ncclUniqueId*, ncclConfig_t*) {
  *comm = make_comm(nranks, rank);
  return ncclSuccess;
}
// A shrink keeps the parent's ranks but the excluded, in order.
STANDIN ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int count, ncclComm_t* newcomm,
                                    ncclConfig_t*, int) {
  const MadeComm* parent = made_comm(comm);
  if (parent == nullptr) return ncclInvalidArgument;
  int below = 0;
  for (int i = 0; i < count; ++i)
    below += exclude[i] < parent->rank ? 1 : 0;
  *newcomm = make_comm(parent->nranks - count, parent->rank - below);
  return ncclSuccess;
}
// A nonblocking split (config->blocking 0) returns ncclInProgress with *newcomm still NULL, as
// NCCL does: the handle is written when the split is done, here at the next
// ncclCommGetAsyncError.
std::vector<std::pair<ncclComm_t*, ncclComm_t>> splits_in_flight;
STANDIN ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* newcomm,
                                   ncclConfig_t* config) {
  const MadeComm* parent = made_comm(comm);
  if (parent == nullptr) return ncclInvalidArgument;
  *newcomm = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  const ncclComm_t child = make_comm(parent->nranks / 2, parent->rank / 2);
  if (config != nullptr && config->blocking == 0) {
    std::lock_guard lock(made_mutex);
    splits_in_flight.emplace_back(newcomm, child);
    return ncclInProgress;
  }
  *newcomm = child;
  return ncclSuccess;
}
STANDIN ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  std::lock_guard lock(made_mutex);
  for (const auto& [handle, child] : splits_in_flight)
    *handle = child;
  splits_in_flight.clear();
  *state = ncclSuccess;
  return ncclSuccess;
}
STANDIN ncclResult_t ncclCommDestroy(ncclComm_t) {
  return ncclSuccess;  // the test's few stay allocated: a later one never reuses a handle here
}
STANDIN ncclResult_t ncclCommCount(const ncclComm_t comm, int* n) {
  const MadeComm* m = made_comm(comm);
  *n = m != nullptr ? m->nranks : 4;
  return ncclSuccess;
}
STANDIN ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  const MadeComm* m = made_comm(comm);
  *rank = m != nullptr ? m->rank : 1;
  return ncclSuccess;
}
// A nonblocking communicator's call returns ncclInProgress: NCCL's thread enqueues it later.
STANDIN ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                   ncclComm_t comm, cudaStream_t) {
  work();
  return reinterpret_cast<int*>(comm) == &fake_nonblocking_comm ? ncclInProgress : ncclSuccess;
}
STANDIN ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                   cudaStream_t) {
  work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                       ncclComm_t, cudaStream_t) {
  work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                                   cudaStream_t) {
  work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclAlltoAll(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                  cudaStream_t) {
  work();
  return ncclSuccess;
}
// Inside a group NCCL only queues; the work happens at ncclGroupEnd.
int group_depth = 0;
STANDIN ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  if (group_depth == 0) work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  if (group_depth == 0) work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
STANDIN ncclResult_t ncclGroupEnd() {
  if (--group_depth == 0) work();
  return ncclSuccess;
}
STANDIN ncclComm_t standin_comm() {
  return reinterpret_cast<ncclComm_t>(&fake_comm);
}
STANDIN ncclComm_t standin_nonblocking_comm() {
  return reinterpret_cast<ncclComm_t>(&fake_nonblocking_comm);
}
STANDIN ncclComm_t standin_second_comm() {
  return reinterpret_cast<ncclComm_t>(&fake_second_comm);
}
