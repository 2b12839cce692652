#include "collectives/mpi_session.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "collectives/liveness.hpp"
#include "common/error.hpp"
#include "common/interrupt.hpp"

namespace opbench {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits for a request, giving up after `timeout_s` (<= 0: forever). Returns whether it completed.
bool wait_with_timeout(MPI_Request* request, double timeout_s) {
  if (timeout_s <= 0) {
    MPI_Wait(request, MPI_STATUS_IGNORE);
    return true;
  }
  const double deadline = now_s() + timeout_s;
  int done = 0;
  while (true) {
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (now_s() > deadline) return false;
    usleep(200);
  }
}

// "rank 3 (node2), rank 4 (node2)", the first 16 and a count of the rest.
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 16; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > 16) out += fmt::format(" and {} more", names.size() - 16);
  return out;
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  // Plain MPI_Init, as nccl-tests does: only the main thread ever calls MPI (the watchdog ends
  // the process without it), and with OpenMPI 4.1 asking for any thread level adds about 0.4 us
  // to every small call (measured: 2.8 against 2.4 us for a 4 KiB all_reduce on 2 ranks).
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
  int leaders = local_rank_ == 0 ? 1 : 0;
  MPI_Allreduce(&leaders, &nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host_.assign(name, static_cast<std::size_t>(len));
  std::vector<char> all(static_cast<std::size_t>(MPI_MAX_PROCESSOR_NAME) * world_size_);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < world_size_; ++r)
    hosts_.emplace_back(all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  MPI_Comm_dup(MPI_COMM_WORLD, &arrival_comm_);
  // A rank that ends without goodbye is named by rank 0 at once, and the job ended.
  if (!std::getenv("OPBENCH_NO_LIVENESS"))
    liveness_ = std::make_unique<Liveness>(*this, [this](const std::string& what) {
      std::fprintf(stderr, "error: %s; ending the job\n", what.c_str());
      report_abort(what);
      // Another rank ending on SIGINT/SIGTERM may tell rank 0 before rank 0's own watchdog acts
      // on the same signal: the job still ends with the interrupt's status.
      exit_now(interrupted() ? interrupted_exit_code() : 1);
    });
}

std::optional<std::string> MpiSession::silent_ranks(double wait_s) const {
  if (!liveness_) return std::nullopt;
  const auto silent = liveness_->silent_ranks(wait_s);
  if (!silent) return std::nullopt;
  if (silent->empty()) return std::string();
  // Rank 0 silent: only another rank can have found it, and says so in its own name.
  if (silent->front() == 0)
    return fmt::format("{} does not answer {}: stopped, or cut off from it", where(0),
                       where(world_rank_));
  return fmt::format("{} {} not answer rank 0: stopped, or cut off from it", names(*silent),
                     silent->size() > 1 ? "do" : "does");
}

void MpiSession::report_abort(const std::string& reason) {
  // Once: a rank lost while a timeout is being reported must not add a second row. Another rank
  // takes the hook too, without calling it, so that its main thread stops with the case.
  abort_.fire(reason, world_rank_ == 0);
  if (world_rank_ != 0 && liveness_) liveness_->report_end(reason);
}

std::string MpiSession::where(int rank) const {
  return rank >= 0 && rank < world_size_ ? fmt::format("rank {} ({})", rank, hosts_[rank])
                                         : fmt::format("rank {}", rank);
}

void MpiSession::leave_liveness() {
  liveness_.reset();
}

MpiSession::~MpiSession() {
  liveness_.reset();  // goodbye first: rank 0 must not take a normal end for a lost rank
  for (auto& [groups, comm] : groups_)
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  if (arrival_comm_ != MPI_COMM_NULL) MPI_Comm_free(&arrival_comm_);
  MPI_Finalize();
}

MPI_Comm MpiSession::group_comm(RankGroups g) {
  if (g.size == world_size_) return MPI_COMM_WORLD;
  for (auto& [groups, comm] : groups_)
    if (groups == g) return comm;
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, group_leader(world_rank_, world_size_, g), world_rank_, &comm);
  groups_.emplace_back(g, comm);
  return comm;
}

std::vector<double> MpiSession::allgather(double value) const {
  std::vector<double> out(static_cast<std::size_t>(world_size_));
  MPI_Allgather(&value, 1, MPI_DOUBLE, out.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  return out;
}

std::vector<std::string> MpiSession::gather_strings(const std::string& s) const {
  constexpr int kLen = 256;
  char mine[kLen] = {};
  std::snprintf(mine, kLen, "%s", s.c_str());
  std::vector<char> all(static_cast<std::size_t>(kLen * world_size_));
  MPI_Gather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (world_rank_ == 0)
    for (int r = 0; r < world_size_; ++r)
      out.emplace_back(all.data() + r * kLen);
  return out;
}

std::int64_t MpiSession::sum(std::int64_t value) const {
  std::int64_t total = 0;
  MPI_Allreduce(&value, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

bool MpiSession::any(bool value) const {
  int v = value ? 1 : 0, out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out != 0;
}

std::optional<bool> MpiSession::try_any_on_arrival(bool value, double timeout_s,
                                                   std::vector<int>* missing) {
  const int tag = arrival_tag_++ % 30000;
  if (world_size_ == 1) return value;
  int go = value ? 1 : 0;
  if (timeout_s <= 0) {
    int any = 0;
    MPI_Allreduce(&go, &any, 1, MPI_INT, MPI_MAX, arrival_comm_);
    return any != 0;
  }
  if (world_rank_ == 0) {
    std::vector<MPI_Request> requests(static_cast<std::size_t>(world_size_ - 1));
    std::vector<int> values(requests.size());
    for (int r = 1; r < world_size_; ++r)
      MPI_Irecv(&values[r - 1], 1, MPI_INT, r, tag, arrival_comm_, &requests[r - 1]);
    const double deadline = now_s() + timeout_s;
    std::vector<int> done(requests.size(), 0);
    while (true) {
      int all = 1;
      for (std::size_t i = 0; i < requests.size(); ++i) {
        if (!done[i]) MPI_Test(&requests[i], &done[i], MPI_STATUS_IGNORE);
        all &= done[i];
      }
      if (all) break;
      if (now_s() > deadline) {
        // The caller ends the process: the receives left open die with it.
        if (missing)
          for (std::size_t i = 0; i < done.size(); ++i)
            if (!done[i]) missing->push_back(static_cast<int>(i) + 1);
        return std::nullopt;
      }
      usleep(200);
    }
    for (int v : values)
      go |= v != 0;
    for (int r = 1; r < world_size_; ++r)
      MPI_Send(&go, 1, MPI_INT, r, tag, arrival_comm_);
  } else {
    MPI_Send(&go, 1, MPI_INT, 0, tag, arrival_comm_);
    MPI_Request request;
    MPI_Irecv(&go, 1, MPI_INT, 0, tag, arrival_comm_, &request);
    // Rank 0 waits timeout_s for the others; allow it that long and as long again to answer.
    if (!wait_with_timeout(&request, 2 * timeout_s)) {
      if (missing) missing->push_back(0);
      return std::nullopt;
    }
  }
  return go != 0;
}

bool MpiSession::any_on_arrival(bool value, const std::string& what, double timeout_s) {
  std::vector<int> missing;
  if (const auto go = try_any_on_arrival(value, timeout_s, &missing)) return *go;
  if (world_rank_ == 0) {
    const std::string reason = fmt::format(
        "timeout: {} of {} ranks did not arrive at {} within {:g} s (stopped, ended, or cut off "
        "from rank 0 on {})",
        names(missing), world_size_, what, timeout_s, host_);
    std::fprintf(stderr, "error: %s; aborting\n", reason.c_str());
    report_abort(reason);
  } else {
    std::fprintf(stderr,
                 "error: timeout: %s waited %g s at %s for %s to say go (stopped, ended, or cut "
                 "off); aborting\n",
                 where(world_rank_).c_str(), 2 * timeout_s, what.c_str(), where(0).c_str());
  }
  std::fflush(stderr);
  abort(1);
}

std::string MpiSession::names(const std::vector<int>& ranks) const {
  std::vector<std::string> out;
  for (int r : ranks)
    out.push_back(where(r));
  return name_list(out);
}

void MpiSession::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps the compiler sure of it
}

void MpiSession::exit_now(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

void MpiSession::wait_for_exit(double limit_s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(limit_s));
  std::fprintf(stderr,
               "error: the job was being ended from another thread, which did not end it "
               "within %g s; ending this rank\n",
               limit_s);
  exit_now(1);
}

void close_ended_run(const std::function<void()>& close) {
  try {
    close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: closing the run: %s\n", e.what());
  }
  std::fflush(stdout);
  std::fflush(stderr);
}

// How often a case being watched looks for a signal and for progress: a handler may only set a
// flag, never wake a condition variable, and a completed call is a relaxed store (or a CUDA
// event) that wakes nobody, so the watchdog looks. Ten looks a second cost nothing a
// collective's timing could show, add at most 0.1 s to the grace, and let a hang be seen at most
// 0.2 s after --timeout plus a call's time (a look by the reader, then one by the watchdog).
constexpr auto kWatchPoll = std::chrono::milliseconds(100);

Watchdog::Watchdog() : thread_([this] { loop(); }), reader_([this] { read_progress(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  {
    std::lock_guard lock(read_mutex_);
    read_stop_ = true;
  }
  read_wake_.notify_all();
  reader_.join();
}

void Watchdog::arm(double timeout_s, double gap_s, std::function<std::int64_t()> completed,
                   std::function<void(const Stall&)> on_stall) {
  if (timeout_s <= 0) return;
  const std::int64_t at_start = completed ? completed() : 0;
  {
    std::lock_guard lock(read_mutex_);  // after the reader's look in flight, if any
    seen_.store(at_start, std::memory_order_relaxed);
    read_ = std::move(completed);
  }
  read_wake_.notify_all();
  {
    std::lock_guard lock(mutex_);
    on_stall_ = std::move(on_stall);
    stall_.emplace(timeout_s, gap_s, now_s(), at_start);
  }
  wake_.notify_all();
}

void Watchdog::watch_interrupt(double grace_s,
                               std::function<void(double signal_age_s)> on_interrupt) {
  {
    std::lock_guard lock(mutex_);
    on_interrupt_ = std::move(on_interrupt);
    grace_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(grace_s));
    signal_seen_.reset();
    watching_ = true;
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  {
    // Waits for a look in flight: what it reads (the case's communicator) may go after this.
    std::lock_guard lock(read_mutex_);
    read_ = nullptr;
  }
  std::lock_guard lock(mutex_);
  stall_.reset();
  watching_ = false;
}

void Watchdog::read_progress() {
  std::unique_lock lock(read_mutex_);
  while (!read_stop_) {
    if (read_) seen_.store(read_(), std::memory_order_relaxed);
    if (read_)
      read_wake_.wait_for(lock, kWatchPoll);
    else
      read_wake_.wait(lock);
  }
}

void Watchdog::loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto now = Clock::now();
    if (watching_ && !signal_seen_ && interrupted()) signal_seen_ = now;
    std::function<void()> fire;
    const double t = now_s();
    if (stall_ && stall_->stalled(seen_.load(std::memory_order_relaxed), t)) {
      fire = [f = on_stall_, seen = Stall{stall_->quiet_s(t), stall_->done()}] { f(seen); };
      stall_.reset();
    } else if (watching_ && signal_seen_ && now >= *signal_seen_ + grace_) {
      watching_ = false;
      fire = [f = on_interrupt_, age = std::chrono::duration<double>(now - *signal_seen_).count()] {
        f(age);
      };
    }
    if (fire) {
      lock.unlock();
      fire();  // prints and ends the process
      lock.lock();
      continue;
    }
    // Sleep until the next look for progress or a signal, or the end of the grace; arm(),
    // watch_interrupt() and the destructor wake it sooner.
    auto until = Clock::time_point::max();
    if (stall_) until = now + kWatchPoll;
    if (watching_)
      until = std::min(until, signal_seen_ ? *signal_seen_ + grace_ : now + kWatchPoll);
    if (until == Clock::time_point::max())
      wake_.wait(lock);
    else
      wake_.wait_until(lock, until);
  }
}

}  // namespace opbench
