// Collectives through NCCL on device buffers, with nccl-tests' buffer layout for in-place calls
// (all_gather sends from recv + rank·count; reduce_scatter receives into send + rank·count).
#include "collectives/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/coll_check.hpp"
#include "collectives/nccl_pattern.hpp"
#include "collectives/nccl_policy.hpp"
#include "collectives/progress_marks.hpp"
#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/launch_graph.hpp"
#include "common/error.hpp"
#include "common/version.hpp"

namespace opbench {
namespace {

// Progress the runner's guard can see (collectives/progress_marks.hpp): an event on the stream
// every kMarkEvery calls, in a ring of kMarkSlots (a host 2048 calls ahead of its device skips
// marks until the device catches up).
constexpr int kMarkEvery = 8;
constexpr std::size_t kMarkSlots = 256;
// abandon(): how long the guard waits for the main thread to leave NCCL, then for ncclCommAbort.
constexpr auto kAbandonLock = std::chrono::seconds(1);
constexpr auto kAbortWait = std::chrono::seconds(5);

void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw run_failure(fmt::format("NCCL {} failed: {} ({})", call, ncclGetErrorString(r),
                                  ncclGetLastError(nullptr)));
}

// ncclGroupStart .. ncclGroupEnd, the group ended also when a call inside it throws: NCCL's
// group depth is the thread's, so a group left open would defer every later call on this
// thread (the next case's communicator included) forever.
class NcclGroup {
 public:
  NcclGroup() { nccl_check(ncclGroupStart(), "GroupStart"); }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();  // unwinding: its own error is not the one being reported
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end() {
    open_ = false;
    nccl_check(ncclGroupEnd(), "GroupEnd");
  }

 private:
  bool open_ = true;
};

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::int8:
      return ncclInt8;
    case DType::uint8:
      return ncclUint8;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
    case DType::uint32:
      return ncclUint32;
    case DType::uint64:
      return ncclUint64;
    case DType::fp16:
      return ncclFloat16;
    case DType::fp32:
      return ncclFloat32;
    case DType::fp64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp8_e4m3:
      return ncclFloat8e4m3;
    case DType::fp8_e5m2:
      return ncclFloat8e5m2;
    default:
      throw std::logic_error("nccl_type: no NCCL type for " + std::string(dtype_name(t)));
  }
}

ncclRedOp_t nccl_op(RedOp r) {
  switch (r) {
    case RedOp::sum:
      return ncclSum;
    case RedOp::prod:
      return ncclProd;
    case RedOp::min:
      return ncclMin;
    case RedOp::max:
      return ncclMax;
    case RedOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm comm, int device, bool cuda_graphs) : device_(device) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    OPBENCH_CUDA_CHECK(cudaSetDevice(device));
    info_ = cuda_device_info(device);
    // fp8 reductions need compute capability 9.0 on every rank: the lowest decides.
    min_cc_ = info_.cc_major * 10 + info_.cc_minor;
    MPI_Allreduce(MPI_IN_PLACE, &min_cc_, 1, MPI_INT, MPI_MIN, comm);
    ncclGetVersion(&version_);
    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "GetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    // As nccl-tests 2.19 initialises: ncclCommInitRankConfig, with NVLink-centric scheduling
    // where the NCCL running here has it (2.28+; it changes B200/GB200 figures).
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    if (nccl_has_nvlink_centric_sched(version_)) config.nvlinkCentricSched = 1;
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
    if (auto mode = nccl_graph_usage_mode(NCCL_VERSION_CODE, version_, cuda_graphs))
      config.graphUsageMode = *mode;
#else
    (void)cuda_graphs;  // this nccl.h has no graphUsageMode: NCCL's default applies
#endif
    nccl_check(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "CommInitRankConfig");
    OPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    timer_ = std::make_unique<CudaEventTimer>();  // events belong to the device current now
    mark_events_.assign(kMarkSlots, nullptr);
    for (auto& e : mark_events_)
      OPBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  // Never throws: the teardown's errors are ignored (the process is ending or the case failed).
  ~NcclCommunicator() override {
    if (comm_) {  // after an error abort() has already released it
      Teardown steps{*this};
      nccl_teardown(steps, teardown_at_destruction(std::uncaught_exceptions()));
    }
    graph_.reset();  // normally already released, by the teardown or by abort()
    for (auto e : mark_events_)
      if (e) cudaEventDestroy(e);  // one still pending is released when the device passes it
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string backend() const override {
    return "nccl";
  }
  int rank() const override {
    return rank_;
  }
  int size() const override {
    return size_;
  }

  std::optional<std::string> unsupported(const CollCall& c) const override {
    if (c.dtype == DType::tf32)
      return std::string("tf32 is a compute mode, not a collective data type");
    const bool fp8 = c.dtype == DType::fp8_e4m3 || c.dtype == DType::fp8_e5m2;
    if (fp8) return nccl_fp8_refusal(version_, min_cc_, is_reduction(c.op));
    return std::nullopt;
  }

  void reserve(std::size_t bytes) override {
    reserve_ = std::max(reserve_, bytes);
  }

  void prepare(const CollCall& c) override {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t ts = dtype_size(c.dtype);
    const auto send_bytes = std::max(static_cast<std::size_t>(c.counts.send_count) * ts, reserve_);
    const auto recv_bytes =
        std::max(static_cast<std::size_t>(std::max(c.counts.recv_count, c.counts.send_count)) * ts,
                 reserve_);
    iteration_ = 0;
    if (send_.bytes() < send_bytes) send_ = DeviceBuffer(send_bytes);
    if (recv_.bytes() < recv_bytes) recv_ = DeviceBuffer(recv_bytes);
    fill(c);
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void launch(const CollCall& c) override {
    const auto held = hold();
    const auto type = nccl_type(c.dtype);
    const std::size_t ts = dtype_size(c.dtype);
    // Each call takes the next slice of the buffers, as nccl-tests does (startColl's shift).
    const std::size_t call_bytes =
        static_cast<std::size_t>(std::max(c.counts.send_count, c.counts.recv_count)) * ts;
    const std::size_t shift =
        rotation_offset(call_bytes, std::min(send_.bytes(), recv_.bytes()), iteration_++);
    auto* recv = static_cast<char*>(recv_.data()) + shift;
    const char* send = c.in_place ? recv : static_cast<const char*>(send_.data()) + shift;
    const auto count = static_cast<std::size_t>(c.counts.count);
    const std::size_t block = count * ts;
    switch (c.op) {
      case CollOp::all_reduce:
        nccl_check(ncclAllReduce(send, recv, count, type, nccl_op(c.redop), comm_, stream_),
                   "AllReduce");
        break;
      case CollOp::all_gather:
        if (c.in_place) send = recv + rank_ * block;
        nccl_check(ncclAllGather(send, recv, count, type, comm_, stream_), "AllGather");
        break;
      case CollOp::reduce_scatter: {
        char* out = c.in_place ? recv + rank_ * block : recv;
        nccl_check(ncclReduceScatter(send, out, count, type, nccl_op(c.redop), comm_, stream_),
                   "ReduceScatter");
        break;
      }
      case CollOp::all_to_all: {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
        if (nccl_native_all_to_all(NCCL_VERSION_CODE, version_)) {
          nccl_check(ncclAlltoAll(send, recv, count, type, comm_, stream_), "AlltoAll");
          break;
        }
#endif
        NcclGroup group;
        for (int peer = 0; peer < size_; ++peer) {
          nccl_check(ncclSend(send + peer * block, count, type, peer, comm_, stream_), "Send");
          nccl_check(ncclRecv(recv + peer * block, count, type, peer, comm_, stream_), "Recv");
        }
        group.end();
        break;
      }
      case CollOp::broadcast:
        nccl_check(ncclBroadcast(send, recv, count, type, c.root, comm_, stream_), "Broadcast");
        break;
      case CollOp::reduce:
        nccl_check(ncclReduce(send, recv, count, type, nccl_op(c.redop), c.root, comm_, stream_),
                   "Reduce");
        break;
      case CollOp::send_recv: {
        NcclGroup group;
        nccl_check(ncclSend(send, count, type, (rank_ + 1) % size_, comm_, stream_), "Send");
        nccl_check(ncclRecv(recv, count, type, (rank_ - 1 + size_) % size_, comm_, stream_),
                   "Recv");
        group.end();
        break;
      }
    }
    if (!capturing_) mark(1);  // a captured call is marked by the graph's replays
  }

  // Polls the stream, and NCCL's asynchronous errors while it waits (a peer that died shows up
  // here instead of as a hang). The hold is taken for one look at a time, so that the guard can
  // abandon a communicator whose stream never finishes.
  void wait() override {
    while (true) {
      {
        const auto held = hold();
        cudaError_t e = cudaStreamQuery(stream_);
        if (e == cudaSuccess) {
          marks_.all_done();
          return;
        }
        if (e != cudaErrorNotReady) OPBENCH_CUDA_CHECK(e);
        ncclResult_t async = ncclSuccess;
        nccl_check(ncclCommGetAsyncError(comm_, &async), "CommGetAsyncError");
        nccl_check(async, "asynchronous error");
      }
      std::this_thread::yield();
    }
  }

  std::vector<double> time_each(const CollCall& c, int iters) override {
    std::vector<cudaEvent_t> events(static_cast<std::size_t>(iters) + 1);
    for (auto& e : events)
      OPBENCH_CUDA_CHECK(cudaEventCreate(&e));
    std::vector<double> us;
    try {
      OPBENCH_CUDA_CHECK(cudaEventRecord(events[0], stream_));
      for (int i = 0; i < iters; ++i) {
        launch(c);
        OPBENCH_CUDA_CHECK(cudaEventRecord(events[i + 1], stream_));
      }
      wait();
      for (int i = 0; i < iters; ++i) {
        float ms = 0;
        OPBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
        us.push_back(ms * 1000.0);
      }
    } catch (...) {
      for (auto e : events)
        cudaEventDestroy(e);
      throw;
    }
    for (auto e : events)
      cudaEventDestroy(e);
    return us;
  }

  void replay_graph(const CollCall& c, int calls, int replays) override {
    // One capture per case (the call and the buffers stay the same); each replay walks the same
    // rotated slices the captured calls took.
    const std::string key =
        fmt::format("{} {} {} {} {} {}", static_cast<int>(c.op), dtype_name(c.dtype),
                    static_cast<int>(c.redop), c.root, c.counts.count, c.in_place);
    {
      auto held = hold();  // recursive: the captured launch() takes it again
      if (!graph_ || graph_key_ != key || graph_->count() != calls) {
        graph_.reset();
        capturing_ = true;
        struct Captured {
          bool& flag;
          ~Captured() { flag = false; }
        } captured{capturing_};
        graph_ = std::make_unique<LaunchGraph>(stream_, calls, [&](int) { launch(c); });
        graph_key_ = key;
      }
      for (int r = 0; r < replays; ++r) {
        graph_->launch(stream_);
        mark(calls);
      }
    }
    wait();
  }

  std::int64_t check(const CollCall& c, bool corrupt_for_test) override {
    fill(c);
    iteration_ = 0;  // the filled slice
    launch(c);
    wait();
    const std::int64_t n = result_elements(c, rank_, size_);
    const std::size_t ts = dtype_size(c.dtype);
    char* result = static_cast<char*>(recv_.data());
    if (c.op == CollOp::reduce_scatter && c.in_place) result += rank_ * c.counts.count * ts;
    if (corrupt_for_test && n > 0) OPBENCH_CUDA_CHECK(cudaMemsetAsync(result, 0x5A, ts, stream_));
    return device_pattern_count_wrong(result, c.dtype, n, c.op, make_pattern(c, size_), rank_,
                                      c.root, c.counts.count, stream_);
  }

  void abort() override {
    const auto held = hold();
    if (comm_ && !aborted_) {
      aborted_ = true;
      Teardown steps{*this};
      nccl_teardown(steps, NcclTeardown::abort);
    }
  }
  bool aborted() const override {
    return aborted_;
  }

  // The watchdog's reader thread, every 0.1 s while a case runs. Queries the marks' events (any
  // thread may; they belong to this device, made current here for that thread).
  std::int64_t completed_calls() override {
    cudaSetDevice(device_);
    return marks_.completed(
        [&](std::size_t slot) { return cudaEventQuery(mark_events_[slot]) == cudaSuccess; });
  }
  std::int64_t calls_per_mark(int at_once) const override {
    return ProgressMarks::calls_between_marks(kMarkEvery, at_once);
  }

  // The guard's thread, on a hang, before the process ends. NCCL allows one thread at a time in
  // a communicator (its user guide, "Thread Safety"), so the guard waits for the main thread to
  // step out of it between two looks at the stream (wait() holds it one look at a time); a main
  // thread stuck inside a launch (a full queue behind a hung kernel) keeps it, and the process
  // then ends without the abort. ncclCommAbort itself has been seen to hang (NCCL issue 829):
  // it runs on a thread of its own, waited for kAbortWait at most. Either way the main thread,
  // once it takes the hold again, finds the communicator abandoned and waits for the end.
  void abandon() override {
    std::unique_lock lock(use_, std::defer_lock);
    if (!lock.try_lock_for(kAbandonLock) || abandoned_ || aborted_ || !comm_) return;
    abandoned_ = aborted_ = true;
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    std::thread([this, done] {
      cudaSetDevice(device_);
      Teardown steps{*this};  // the graph first, then ncclCommAbort (nccl_policy.hpp)
      nccl_teardown(steps, NcclTeardown::abort);
      done->set_value();
    }).detach();
    finished.wait_for(kAbortWait);
  }

 private:
  // The teardown steps on this communicator's members (the order: nccl_policy's nccl_teardown).
  struct Teardown final : NcclTeardownSteps {
    NcclCommunicator& c;
    explicit Teardown(NcclCommunicator& owner) : c(owner) {}
    bool holds_graph() const override { return c.graph_ != nullptr; }
    void synchronize_stream() override {
      if (c.stream_ && cudaStreamSynchronize(c.stream_) != cudaSuccess) cudaGetLastError();
    }
    void release_graph() override {
      c.graph_.reset();
      c.graph_key_.clear();
    }
    void destroy_communicator() override {
      ncclCommDestroy(c.comm_);
      c.comm_ = nullptr;
    }
    void abort_communicator() override {
      ncclCommAbort(c.comm_);
      c.comm_ = nullptr;
    }
  };

  // The main thread's hold on the communicator while it calls NCCL, taken and released around
  // each call or look at the stream. After the guard has abandoned the communicator the main
  // thread must not touch it again: it waits there for the guard to end the process.
  std::unique_lock<std::recursive_timed_mutex> hold() {
    std::unique_lock lock(use_);
    if (abandoned_) {
      lock.unlock();
      MpiSession::wait_for_exit();
    }
    return lock;
  }

  // `calls` more calls issued: every kMarkEvery-th gets an event after it on the stream.
  void mark(std::int64_t calls) {
    marks_.issued(calls, [&](std::size_t slot) {
      if (cudaEventRecord(mark_events_[slot], stream_) == cudaSuccess) return true;
      cudaGetLastError();  // an event not recorded is no mark; the next call's may be
      return false;
    });
  }

  // The input pattern where the op reads it, and poison where its result goes.
  void fill(const CollCall& c) {
    const PatternSpec spec = make_pattern(c, size_);
    device_pattern_poison(recv_.data(), c.dtype, std::max(c.counts.recv_count, c.counts.send_count),
                          stream_);
    void* input = c.in_place ? recv_.data() : send_.data();
    std::int64_t offset = c.in_place && c.op == CollOp::all_gather ? rank_ * c.counts.count : 0;
    device_pattern_fill(input, c.dtype, c.counts.send_count, offset, spec, rank_, stream_);
  }

  int device_, rank_ = 0, size_ = 1;
  CudaDeviceInfo info_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer send_, recv_;
  std::unique_ptr<CudaEventTimer> timer_;
  bool aborted_ = false;
  int min_cc_ = 0;           // the lowest compute capability among the ranks (major·10 + minor)
  int version_ = 0;          // NCCL running here (ncclGetVersion)
  std::size_t reserve_ = 0;  // bytes the buffers hold at least
  long iteration_ = 0;       // calls since prepare(): picks the buffer slice
  std::unique_ptr<LaunchGraph> graph_;  // -G: the captured calls of the current case
  std::string graph_key_;
  ProgressMarks marks_{kMarkSlots, kMarkEvery};  // what the runner's guard reads
  std::vector<cudaEvent_t> mark_events_;         // by slot of marks_
  bool capturing_ = false;                       // a graph is being captured: no marks
  std::recursive_timed_mutex use_;               // see hold() and abandon()
  bool abandoned_ = false;                       // under use_
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device,
                                                     MpiSession& /*session*/, bool cuda_graphs) {
  return std::make_unique<NcclCommunicator>(comm, device, cuda_graphs);
}

nlohmann::json nccl_config_record(bool cuda_graphs) {
  int running = 0;
  ncclGetVersion(&running);
  const auto mode = nccl_graph_usage_mode(NCCL_VERSION_CODE, running, cuda_graphs);
  nlohmann::json out;
  out["nvlinkCentricSched"] = nccl_has_nvlink_centric_sched(running) && NCCL_VERSION_CODE >= 22800
                                  ? nlohmann::json(1)
                                  : nlohmann::json("NCCL's default");
  if (mode)
    out["graphUsageMode"] = *mode;
  else
    out["graphUsageMode"] = fmt::format(
        "not set: NCCL {} (built with {}.{}.{}) has no graphUsageMode before 2.29; NCCL's default",
        version_from_int(running), NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  return out;
}

std::string nccl_version_string() {
  int v = 0;
  ncclGetVersion(&v);
  return version_from_int(v);
}

}  // namespace opbench
