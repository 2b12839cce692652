#include "collectives/coll_runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>

#include "collectives/coll_check.hpp"
#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/text.hpp"
#include "common/timer.hpp"

namespace opbench {

std::string aggregation_name(RankAggregation a) {
  static constexpr EnumNames<RankAggregation, 4> kNames{{{RankAggregation::rank0, "rank0"},
                                                         {RankAggregation::mean, "mean"},
                                                         {RankAggregation::min, "min"},
                                                         {RankAggregation::max, "max"}}};
  return std::string(enum_name(kNames, a, ""));
}

CollRunner::CollRunner(MpiSession& session, CollRunOptions options)
    : session_(session), options_(options) {}

double CollRunner::combine(const std::vector<double>& t) const {
  switch (options_.aggregation) {
    case RankAggregation::rank0:
      return t[0];
    case RankAggregation::mean:
      return std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
    case RankAggregation::min:
      return *std::min_element(t.begin(), t.end());
    case RankAggregation::max:
      return *std::max_element(t.begin(), t.end());
  }
  return t[0];
}

namespace {

// Whether a call's result is defined at all: NCCL gives in-place rules for AllReduce, Broadcast
// and Reduce (send == recv) and for AllGather and ReduceScatter (nccl.h's offsets), none for
// the grouped send/recv of all_to_all and send_recv, so in place those are timed, never checked
// (nccl-tests prints N/A for them too).
std::optional<std::string> unchecked_in_place(const CollCall& call) {
  if (!call.in_place || (call.op != CollOp::all_to_all && call.op != CollOp::send_recv))
    return std::nullopt;
  return "#wrong N/A: in-place " + coll_op_name(call.op) +
         " is undefined in NCCL (nccl.h defines in-place use only for AllReduce, Broadcast, "
         "Reduce, AllGather and ReduceScatter); timed, not checked, as nccl-tests does";
}

// Disarms the watchdog however the scope is left: a row, nullptr or an exception.
struct DisarmOnExit {
  Watchdog& watchdog;
  ~DisarmOnExit() { watchdog.disarm(); }
};

}  // namespace

CollResult CollRunner::run(Communicator& comm, const CollCall& call, const std::string& label) {
  CollResult r;
  if (auto why = comm.unsupported(call)) {
    r.status = Status::skipped;
    r.note = *why;
    return r;
  }
  stall_for_test(StallPoint::arrival);
  // A signal from here to the end of the case, the arrival check included, ends the case when it
  // outlives the grace. Whatever leaves this function — a row or an exception — disarms the
  // watchdog.
  watch_interrupt(label);
  const DisarmOnExit disarm{watchdog_};
  session_.arrival_check(label, options_.timeout_s);
  const std::string where = session_.where(session_.world_rank());
  {
    std::lock_guard lock(comm_mutex_);
    comm_ = &comm;
  }
  struct Forget {  // the guard may abandon the communicator only while its case runs
    CollRunner& runner;
    ~Forget() {
      std::lock_guard lock(runner.comm_mutex_);
      runner.comm_ = nullptr;
    }
  } forget{*this};
  begin_guarded(label);
  arm_phase("its buffers and first call", 1);
  stall_for_test(StallPoint::inside);

  // Every rank must be able to hold the buffers, or none runs the case.
  std::string prepare_error;
  try {
    comm.prepare(call);
  } catch (const Error& e) {
    prepare_error = e.what();
  }
  if (session_.any(!prepare_error.empty())) {
    r.status = Status::skipped;
    r.note = prepare_error.empty() ? "another rank could not allocate its buffers" : prepare_error;
    return r;
  }

  // A call the library refuses, or an error it reports while we wait: said at once with this
  // rank, its host and the case (the process may not get to say more), and the communicator
  // aborted, never destroyed with work in flight. A refusal every rank meets (an argument the
  // library rejects) fails the row and the run goes on with a new communicator; one only some
  // ranks meet leaves the others inside the call, and the arrival check below, or their
  // watchdogs, end the job within --timeout, naming who did not come.
  std::string error;
  try {
    measure(comm, call, r);
    verify(comm, call, r);
  } catch (const Error& e) {
    error = e.what();
    std::fprintf(stderr, "error: %s: %s: %s\n", where.c_str(), label.c_str(), error.c_str());
    std::fflush(stderr);
    comm.abort();
  }
  session_.arrival_check(label + " (its end)", options_.timeout_s);
  if (session_.any(!error.empty())) {
    if (!comm.aborted()) comm.abort();  // every rank starts the next case on a new one
    r.status = Status::failed;
    r.note = error.empty() ? "another rank failed (its error is on stderr)" : error;
  }
  return r;
}

namespace {
constexpr const char* kStartUp = "the run's start";
}  // namespace

void CollRunner::guard_start_up(const std::string& step) {
  if (label_ != kStartUp) begin_guarded(kStartUp);  // one clock for all the steps
  arm_phase(step, 0);
  stall_for_test(StallPoint::start_up);
}

void CollRunner::end_run() {
  stall_for_test(StallPoint::end);
  session_.arrival_check("the run's end", options_.timeout_s);
}

Communicator* CollRunner::start_case(const std::string& label,
                                     const std::function<Communicator&()>& make) {
  end_start_up();  // the agreement below is timed on its own, and names who did not come
  const std::string where = "the start of " + label;
  watch_interrupt(where);
  const DisarmOnExit disarm{watchdog_};
  if (cases_started_++ > 0) stall_for_test(StallPoint::between_cases);
  if (session_.any_on_arrival(interrupted(), where, options_.timeout_s)) return nullptr;
  stall_for_test(StallPoint::set_up);
  begin_guarded(label);
  arm_phase("its communicator's set-up", 0);
  return &make();
}

void CollRunner::begin_guarded(const std::string& label) {
  label_ = label;
  case_start_ = std::chrono::steady_clock::now();
  per_call_s_ = 0;  // nothing measured yet in this case
}

void CollRunner::stall_for_test(StallPoint point) {
  if (stalled_ || point != options_.stall_at || session_.world_rank() != options_.stall_rank)
    return;
  stalled_ = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(options_.stall_s));
}

void CollRunner::measure(Communicator& comm, const CollCall& call, CollResult& r) {
  const bool fail_here = options_.fail_rank == -2 || options_.fail_rank == session_.world_rank();
  if (fail_here && !failed_for_test_) {
    failed_for_test_ = true;
    throw run_failure("test: the library refused this call (--test-fail-rank)");
  }
  // The first call alone, under --timeout: it gives the time per call that bounds the rest. It
  // is made with -w 0 too, as nccl-tests makes one untimed call whatever -w says: NCCL sets up
  // its connections (P2P, NVLS, the network) at a communicator's first call, which would be
  // sample 1's, its noise keeping the loop sampling to --max-time and the mean far too high.
  {
    CpuTimer first;
    comm.launch(call);
    comm.wait();
    // The slowest rank's first call bounds every rank's phases: with each rank's own, the
    // deadlines of one long sample could differ by more than rank 0's lead, and a rank other
    // than rank 0 would speak first.
    const auto firsts = session_.allgather(first.elapsed_s());
    per_call_s_ = *std::max_element(firsts.begin(), firsts.end());
    warn_if_close_to_timeout();
    arm_phase("the warm-up", std::max(0, options_.warmup - 1));
    for (int i = 1; i < options_.warmup; ++i)
      comm.launch(call);
    comm.wait();
  }
  // -G: the capture (and the graph's first replay) is a first-call cost, outside every sample.
  if (options_.graph_replays > 0) {
    arm_phase("the CUDA graph's capture", options_.iters, options_.iters);
    comm.replay_graph(call, options_.iters, 1);
  }
  session_.barrier(session_.world());

  double my_time_us = 0;
  if (options_.per_iter) {
    // As nccl-tests reports per-iteration times: calls back to back with a timestamp between
    // each two, and each iteration's time the slowest rank's (the call is over when every rank
    // is done).
    arm_phase(fmt::format("{} timed calls", options_.iters), options_.iters);
    CpuTimer pass;
    const std::vector<double> mine = comm.time_each(call, options_.iters);
    r.sampling_s = pass.elapsed_s();
    my_time_us = std::accumulate(mine.begin(), mine.end(), 0.0) / static_cast<double>(mine.size());
    r.iter_times_us.resize(mine.size());
    MPI_Allreduce(mine.data(), r.iter_times_us.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                  MPI_MAX, session_.world());
    r.iter_stats = compute_stats(r.iter_times_us);
    // One pass of -n calls: the percentiles rest on that many values, and the row says so.
    append_note(r.note, fmt::format("per-iteration p50/p99 over the {} calls of one pass (-n){}",
                                    options_.iters,
                                    options_.iters < 100 ? ": below 100 calls, p99 is about their "
                                                           "slowest"
                                                         : ""));
    r.rank_times_us = session_.allgather(my_time_us);
    r.time_us = combine(r.rank_times_us);
  } else {
    // Every rank adds the same combined sample and the same "measured" time (the slowest
    // rank's), so enough_samples() answers the same everywhere.
    std::vector<double> rank_sums(static_cast<std::size_t>(session_.world_size()), 0.0);
    double measured_s = 0;
    CpuTimer loop;
    do {
      const int calls_in_sample = options_.iters * std::max(1, options_.graph_replays);
      // -G issues the -n calls a replay at a time, and a replay is marked only once it brings
      // the calls since the last mark to the communicator's step (with -n 3 against NCCL's 8,
      // every third replay): the allowance counts the calls between marks, not one replay's.
      arm_phase(fmt::format("sample {} ({} calls)", r.samples_us.size() + 1, calls_in_sample),
                calls_in_sample, options_.graph_replays > 0 ? options_.iters : 1);
      session_.barrier(session_.world());
      CpuTimer timer;
      int calls = options_.iters;
      if (options_.graph_replays > 0) {  // -G: the -n calls as one CUDA graph, replayed
        comm.replay_graph(call, options_.iters, options_.graph_replays);
        calls *= options_.graph_replays;
      } else {
        for (int i = 0; i < options_.iters; ++i)
          comm.launch(call);
        comm.wait();
      }
      const auto ranks = session_.allgather(timer.elapsed_us() / calls);
      for (std::size_t i = 0; i < ranks.size(); ++i)
        rank_sums[i] += ranks[i];
      r.samples_us.push_back(combine(ranks));
      measured_s += *std::max_element(ranks.begin(), ranks.end()) * calls * 1e-6;
      per_call_s_ = std::max(per_call_s_, *std::max_element(ranks.begin(), ranks.end()) * 1e-6);
    } while (!enough_samples(r.samples_us, measured_s, options_.measure));
    r.sampling_s = loop.elapsed_s();
    for (double& sum : rank_sums)
      sum /= static_cast<double>(r.samples_us.size());
    r.rank_times_us = rank_sums;
    // Each rank's mean over all its calls, combined across ranks as nccl-tests combines its one
    // batch (for the mean and rank 0 this is also the mean of the samples).
    r.time_us = combine(r.rank_times_us);
    r.sample_stats = compute_stats(r.samples_us);
    if (r.sample_stats->rse >= options_.measure.max_noise)
      r.note = fmt::format("noisy (rse {:.1f}% > {:.1f}% after {} samples of {} calls)",
                           r.sample_stats->rse * 100, options_.measure.max_noise * 100,
                           r.samples_us.size(), options_.iters);
  }
  const auto& t = r.rank_times_us;
  r.min_time_us = *std::min_element(t.begin(), t.end());
  r.max_time_us = *std::max_element(t.begin(), t.end());
}

void CollRunner::arm_phase(const std::string& phase, int calls, int at_once) {
  // No call of the phase may go --timeout plus the expected time of the calls between two
  // progress marks without completing (collectives/stall_detector.hpp): a healthy sample of
  // thousands of slow calls goes on as long as calls complete, and a hang is caught --timeout
  // after the last call that completed, whatever -n is. The expected time is the slowest time
  // per call seen so far in the case; before the first call is timed, --timeout alone.
  // A communicator's set-up has none yet, and no calls: --timeout alone.
  const std::int64_t calls_per_mark = comm_ ? comm_->calls_per_mark(at_once) : 1;
  const double gap_s = static_cast<double>(calls_per_mark) * per_call_s_;
  // Rank 0 is meant to speak first: the other ranks wait kGrace seconds longer, so their lines
  // follow rank 0's, and still end the job should rank 0 be the one lost.
  constexpr double kGrace = 10;
  const bool lead = session_.world_rank() == options_.lead_rank;
  std::string why = fmt::format("--timeout {:g} s", options_.timeout_s);
  if (per_call_s_ > 0)
    why += fmt::format(" + {} call{} x {:.3g} s", calls_per_mark, calls_per_mark == 1 ? "" : "s",
                       per_call_s_);
  if (!lead) why += fmt::format(" + {:g} s for rank 0 to speak first", kGrace);
  // Every rank's watchdog ends its own process, saying which phase of which case stopped
  // completing calls. It touches the communicator only through abandon(), which never waits on
  // a main thread stuck inside it: the process is ending, and the driver and mpirun clean up.
  //
  // Whichever rank's guard acts first names the culprits before it ends the job: rank 0 asks
  // every rank over the liveness channel, another rank asks rank 0 to, and those that do not
  // answer are stopped or cut off (rank 0 itself, when it does not reply).
  watchdog_.arm(
      options_.timeout_s > 0 ? options_.timeout_s + (lead ? 0 : kGrace) : 0, gap_s,
      [comm = comm_] { return comm ? comm->completed_calls() : 0; },
      [this, where = session_.where(session_.world_rank()), label = label_, phase, calls, why,
       start = case_start_, set_up = comm_ == nullptr](const Watchdog::Stall& stall) {
        const double ran_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const auto silent = session_.silent_ranks(std::clamp(options_.timeout_s, 1.0, 5.0));
        const std::string culprits =
            !silent ? "a rank stopped inside the operation or a link failed"
            : silent->empty()
                ? "every rank answers rank 0, so every process is alive: a rank is stuck inside "
                  "the operation, or the library or the network hangs"
                : *silent;
        const std::string progress =
            set_up ? fmt::format("not done after {:.1f} s ({})", stall.quiet_s, why)
                   : fmt::format("no call completed for {:.1f} s ({}; {} of {} call{} done)",
                                 stall.quiet_s, why, stall.done, calls, calls == 1 ? "" : "s");
        const std::string reason =
            fmt::format("timeout: {}: {}: {}: {}: {}; {} {:.1f} s", where, label, phase, progress,
                        culprits, label == kStartUp ? "it had taken" : "the case had run", ran_s);
        std::fprintf(stderr, "error: %s; ending this rank\n", reason.c_str());
        session_.report_abort(reason);
        abandon_communicator();
        MpiSession::exit_now(1);
      });
}

void CollRunner::abandon_communicator() {
  std::lock_guard lock(comm_mutex_);
  if (comm_) comm_->abandon();
}

void CollRunner::watch_interrupt(const std::string& label) {
  // The case loops stop at a signal between cases; a case that is running when it comes has
  // kGraceS to end and keep its real row. One that does not (a large -n, a slow call, a hang) is
  // ended here with a failed row and the run closed (summary, end time, closing lines), before a
  // SIGKILL can leave none. The SIGKILL that comes soonest is Open MPI's: mpirun, given SIGTERM or
  // SIGINT (by `timeout`, by Slurm at a time limit, which signals every process of the job, or by
  // a Ctrl-C), sends the ranks SIGCONT at once, SIGTERM 1 s later and SIGKILL 1 s after that
  // (odls_base_sigkill_timeout, measured with Open MPI 4.1.4), so a rank hears SIGTERM whichever
  // signal mpirun got, and the grace and the writing must fit well within 1 s. mpirun signalled
  // twice (`timeout` signals mpirun and then its process group) exits at once instead, and its
  // ranks are SIGKILLed about 1 s later without a signal before: the end of the launcher counts as
  // the interrupt then (common/interrupt's watch_launcher), seen within this thread's 0.1 s look.
  // Slurm's own KillWait (30 s by default) and a user are patient enough for the grace. The
  // price: a case the signal catches with more than 0.5 s to go is written as interrupted rather
  // than measured (the default stop rule samples a case for up to about a second).
  constexpr double kGraceS = 0.5;
  // The other ranks wait a little longer, so that rank 0 writes the row with its own reason and
  // ends the job first; one still here then tells rank 0 why (report_abort) and ends too.
  constexpr double kLagS = 0.3;
  const bool lead = session_.world_rank() == options_.lead_rank;
  watchdog_.watch_interrupt(
      kGraceS + (lead ? 0 : kLagS),
      [this, where = session_.where(session_.world_rank()), label,
       start = std::chrono::steady_clock::now()](double signal_age_s) {
        const double in_case_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Said so that it fits whoever stopped the job: mpirun passing on a Ctrl-C or its own
        // SIGTERM (`timeout`, a batch script's end) as SIGTERM, mpirun ending at once, or a
        // scheduler's time limit.
        const std::string reason = fmt::format(
            "interrupted: {} came {:.1f} s into the case, which had not ended {:.1f} s later "
            "({:.1f} s in all; {}: {}); the run ends here with this row, before the SIGKILL that "
            "follows a stop leaves none (from mpirun about 1 s after it passes the stop on or "
            "ends, from a scheduler's time limit after its grace, Slurm's KillWait)",
            interruption(), in_case_s - signal_age_s, signal_age_s, in_case_s, where, label);
        std::fprintf(stderr, "error: %s; ending this rank\n", reason.c_str());
        session_.report_abort(reason);
        MpiSession::exit_now(interrupted_exit_code());
      });
}

void CollRunner::warn_if_close_to_timeout(const std::vector<double>& rank_times_us) {
  double call_s = per_call_s_;
  for (double us : rank_times_us)
    call_s = std::max(call_s, us * 1e-6);
  if (options_.timeout_s > 0 && call_s > options_.timeout_s / 2 && session_.world_rank() == 0)
    std::fprintf(stderr,
                 "warning: %s: one call takes %.3g s, more than half of --timeout %g s: a call "
                 "slower still would end the job; raise --timeout\n",
                 label_.c_str(), call_s, options_.timeout_s);
}

void CollRunner::verify(Communicator& comm, const CollCall& call, CollResult& r) {
  if (options_.check_passes <= 0) return;
  std::optional<std::string> unchecked = unchecked_in_place(call);
  if (!unchecked) unchecked = unverifiable_reason(call, make_pattern(call, comm.size()));
  if (unchecked) {
    append_note(r.note, *unchecked);
    return;
  }
  {
    std::int64_t wrong = 0;
    arm_phase("the check", options_.check_passes);
    for (int pass = 0; pass < options_.check_passes; ++pass)
      wrong += comm.check(call, pass == 0 && session_.world_rank() == options_.corrupt_rank);
    r.wrong = session_.sum(wrong);
    if (r.wrong > 0) {
      r.status = Status::failed;
      r.note =
          fmt::format("{} wrong element{} over {} check pass{}", r.wrong, r.wrong == 1 ? "" : "s",
                      options_.check_passes, options_.check_passes == 1 ? "" : "es");
    }
  }
}

}  // namespace opbench
