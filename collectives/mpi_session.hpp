#pragma once
// MPI as launcher and bootstrap: the world, this rank's place on its node, the sub-communicators
// of --group-size, small world-wide reductions for the runner, and the two guards against
// hangs — an arrival check before each case that names the ranks that did not come, and a
// watchdog that aborts the job when no call of a case has completed for --timeout.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/abort_once.hpp"
#include "collectives/rank_groups.hpp"
#include "collectives/stall_detector.hpp"

namespace opbench {

class Liveness;

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }  // ranks on this node
  int nodes() const { return nodes_; }
  const std::string& host() const { return host_; }
  // Every rank's host, by world rank (gathered once at start), so any rank can name another's.
  const std::vector<std::string>& hosts() const { return hosts_; }
  std::string where(int rank) const;  // "rank 3 (node2)"
  MPI_Comm world() const { return MPI_COMM_WORLD; }

  // This rank's group of `g` (collectives/rank_groups.hpp; the whole world when g.size is the
  // world size), made at its first use.
  MPI_Comm group_comm(RankGroups g);

  void barrier(MPI_Comm comm) const { MPI_Barrier(comm); }
  std::vector<double> allgather(double value) const;
  std::vector<std::string> gather_strings(const std::string& s) const;  // at rank 0
  std::int64_t sum(std::int64_t value) const;
  bool any(bool value) const;

  // Every rank checks in with rank 0 at `what` (a case's start or end). Rank 0 waits up to
  // `timeout_s` and, if some rank has not come, prints which ones and aborts the job; the others
  // wait for rank 0's go twice as long. timeout_s <= 0 waits forever (a plain barrier).
  void arrival_check(const std::string& what, double timeout_s) {
    any_on_arrival(false, what, timeout_s);
  }
  // any(value) as an arrival check: each rank's value travels with its check-in and rank 0's go
  // carries whether any was true. For a world-wide agreement outside a case (whether to start
  // the next one), where no stall guard is armed: a rank lost there is named within `timeout_s`
  // instead of leaving the others inside an MPI_Allreduce for good.
  bool any_on_arrival(bool value, const std::string& what, double timeout_s);
  // The check-in under any_on_arrival without its ending: the agreed value, or nullopt when some
  // rank did not come within `timeout_s` (on rank 0; `missing` gets them) or rank 0 did not say
  // go within twice that (on another rank; `missing` gets 0). The caller ends the process then.
  std::optional<bool> try_any_on_arrival(bool value, double timeout_s, std::vector<int>* missing);
  std::string names(const std::vector<int>& ranks) const;  // "rank 1 (node1), rank 3 (node2)"

  [[noreturn]] void abort(int code) const;
  // Says goodbye on the liveness channel before this rank ends the job with an error line of its
  // own, so that rank 0 does not add "ended without finishing" for it.
  void leave_liveness();
  // Who is stopped or cut off, found over the liveness channel from any rank (rank 0 asks every
  // rank; another rank asks rank 0 to, and names rank 0 when it does not reply within `wait_s`
  // + 2 s): "rank 3 (node2) does not answer rank 0", "" when every rank answers, nullopt when
  // this rank cannot ask (no liveness channel). Safe from any thread.
  std::optional<std::string> silent_ranks(double wait_s) const;
  // What rank 0 does before a timeout or an interrupt ends the job: the binary writes the
  // running case as a failed row with the reason, so an aborted run leaves its last case and why.
  // Called from the arrival check, a watchdog or the liveness thread (the main thread is stuck in
  // MPI, not writing). Use AbortHookScope, which opens the hook for one case and closes it after.
  void set_abort_hook(AbortOnce::Hook hook) { abort_.open(std::move(hook)); }
  // Closes the case's hook; true when report_abort took it first, so this process is ending (see
  // AbortOnce::close).
  bool clear_abort_hook() { return abort_.close(); }
  // Takes the case's hook, once per process, and on rank 0 calls it (a rank lost while a timeout
  // is being reported must not add a second row); on another rank the reason goes to rank 0 over
  // the liveness channel, which says it and writes the row in its turn.
  // Contract: every caller ends the process right after (exit_now, or abort from the main
  // thread). A main thread that finds the hook taken (AbortHookScope) writes nothing more and
  // waits for that end instead of going on to a second row for the case.
  void report_abort(const std::string& reason);
  // Ends this process at once, from any thread, without MPI: mpirun sees a rank exit without
  // finalizing and takes the whole job down.
  [[noreturn]] static void exit_now(int code);
  // The main thread's side of that contract: waits for the thread that took the abort hook to
  // end the process. Should it never do so (a caller breaking the contract), ends it with 1
  // after `limit_s`, so that a job does not hang on a bug here.
  [[noreturn]] static void wait_for_exit(double limit_s = 60);

 private:
  int world_rank_ = 0, world_size_ = 1, local_rank_ = 0, local_size_ = 1, nodes_ = 1;
  std::string host_;
  std::vector<std::string> hosts_;
  MPI_Comm arrival_comm_ = MPI_COMM_NULL;
  std::vector<std::pair<RankGroups, MPI_Comm>> groups_;
  int arrival_tag_ = 0;
  AbortOnce abort_;                     // the running case's abort hook, taken at most once
  std::unique_ptr<Liveness> liveness_;  // every rank's TCP line to rank 0 (collectives/liveness)
};

// The abort hook of one case: set for its run, closed however the run ends (a row or an
// exception), so a hook never outlives the case it writes. When the hook was taken first (a
// timeout, an interrupt or a lost rank is ending the job, and rank 0 has written the case's row
// from that thread), closing the scope never returns: the main thread must not write the case's
// own row, a second one, and waits for the process to end (MpiSession::wait_for_exit).
class AbortHookScope {
 public:
  AbortHookScope(MpiSession& session, AbortOnce::Hook hook) : session_(session) {
    session_.set_abort_hook(std::move(hook));
  }
  ~AbortHookScope() {
    if (session_.clear_abort_hook()) MpiSession::wait_for_exit();
  }
  AbortHookScope(const AbortHookScope&) = delete;
  AbortHookScope& operator=(const AbortHookScope&) = delete;

 private:
  MpiSession& session_;
};

// An abort hook's last step on rank 0, after the running case's row: `close` ends the run as its
// last case would (environment.json's end_time, the summary, the closing lines), so that a job
// ended inside a case — a timeout, a lost rank, SIGINT/SIGTERM — still leaves them. Called on the
// thread that ends the process: what `close` throws is printed, never let out.
void close_ended_run(const std::function<void()>& close);

// Ends the job when a case stops making progress, or goes on too long after SIGINT/SIGTERM:
// arm() before each phase of a case and watch_interrupt() before the case, disarm() after it.
// Each callback is called from the watchdog's own thread, and must print and end the process
// without MPI (MpiSession::report_abort, then MpiSession::exit_now): the main thread is stuck
// inside an MPI or NCCL call.
class Watchdog {
 public:
  // What the watchdog saw when it acted on a stall.
  struct Stall {
    double quiet_s = 0;     // seconds since a call last completed (or the phase began)
    std::int64_t done = 0;  // calls completed in the phase
  };
  Watchdog();
  ~Watchdog();
  // Watches a phase: every 0.1 s a reader thread calls `completed` (the calls completed so far;
  // disarm() never returns while it runs) and the watchdog calls `on_stall` once the count has
  // not moved for timeout_s + gap_s (collectives/stall_detector.hpp). The reader is a thread of
  // its own so that the watchdog never waits inside a library: a CUDA query can block behind a
  // main thread stuck in a launch, and a reader that blocks just shows no progress.
  // timeout_s <= 0: no guard.
  void arm(double timeout_s, double gap_s, std::function<std::int64_t()> completed,
           std::function<void(const Stall&)> on_stall);
  // Once SIGINT or SIGTERM has come (common/interrupt) and the case has not ended `grace_s`
  // after this thread saw it, calls `on_interrupt` with the seconds since then. A signal that
  // came before the call counts from the call.
  void watch_interrupt(double grace_s, std::function<void(double signal_age_s)> on_interrupt);
  void disarm();  // the guard and the interrupt watch both

 private:
  void loop();
  void read_progress();  // the reader thread
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void(const Stall&)> on_stall_;
  std::optional<StallDetector> stall_;  // set while armed
  bool stop_ = false;
  std::function<void(double)> on_interrupt_;
  std::chrono::steady_clock::duration grace_{};
  std::optional<std::chrono::steady_clock::time_point> signal_seen_;  // by this thread
  bool watching_ = false;
  std::mutex read_mutex_;  // held by the reader while it calls read_
  std::condition_variable read_wake_;
  std::function<std::int64_t()> read_;  // the armed phase's count of completed calls
  bool read_stop_ = false;
  std::atomic<std::int64_t> seen_{0};  // the reader's last look
  std::thread thread_, reader_;
};

}  // namespace opbench
