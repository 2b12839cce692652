#pragma once
// Times and verifies one collective call on every rank, with nccl-tests semantics: a sample is,
// after a barrier, `iters` calls back to back, then wait; its time = elapsed / iters per rank,
// combined across ranks by --average (0 rank 0, 1 mean, 2 min, 3 max). Samples repeat under the
// shared adaptive stop (common/measure, collective profile); every rank sees the same combined
// samples, so all reach the same decision without another message. bench_fsdp runs here too.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/mpi_session.hpp"
#include "common/measure.hpp"
#include "common/record.hpp"
#include "common/stats.hpp"

namespace opbench {

enum class RankAggregation { rank0 = 0, mean = 1, min = 2, max = 3 };
std::string aggregation_name(RankAggregation a);

// Test only: where --test-stall-rank stops, once: before the first case's arrival check,
// inside its first call (after arriving), after the first case before the ranks agree to start
// the next, before the first case's communicator is made (CollRunner::start_case), or at the
// run's first guarded start-up step (CollRunner::guard_start_up), or after the last case
// (CollRunner::end_run).
enum class StallPoint { arrival, inside, between_cases, set_up, start_up, end };

struct CollRunOptions {
  int iters = 20;
  int warmup = 5;
  bool per_iter = false;  // time each call alone, and report its distribution (no resampling)
  MeasureOptions measure = measure_defaults(MeasureProfile::collective);
  int check_passes = 1;  // -c: verified calls after timing (0: none)
  RankAggregation aggregation = RankAggregation::mean;
  double timeout_s = 300;  // no call completing for this long ends the job (arm_phase); <= 0: none
  int corrupt_rank = -1;   // test only: this world rank spoils one result element
  int stall_rank = -1;     // test only: this world rank stops ...
  double stall_s = 0;      // ... for this long ...
  StallPoint stall_at = StallPoint::arrival;  // ... here
  int fail_rank = -1;     // test only: this world rank's first call is refused (-2: every rank)
  int lead_rank = 0;      // whose watchdog speaks first (the others wait a grace); test: any
  int graph_replays = 0;  // -G N: each sample replays a CUDA graph of the -n calls N times
};

struct CollResult {
  Status status = Status::ok;
  std::string note;
  double time_us = 0;  // each rank's mean time per call, combined across ranks as -a says
  std::vector<double> samples_us;  // each sample, combined across ranks
  std::optional<Stats> sample_stats;
  double sampling_s = 0;  // wall time of the sampling loop
  double min_time_us = 0, max_time_us = 0;
  std::vector<double> rank_times_us;  // one per world rank
  std::optional<Stats> iter_stats;    // --per-iter: over iterations, each averaged over ranks
  std::vector<double> iter_times_us;
  std::int64_t wrong = -1;  // wrong elements summed over ranks; -1 when not checked
};

class CollRunner {
 public:
  CollRunner(MpiSession& session, CollRunOptions options);
  // `label` names the case in timeout messages ("all_reduce 1048576 B fp32 in_place").
  CollResult run(Communicator& comm, const CollCall& call, const std::string& label);
  // Before a case, on every rank: whether to run it at all, and its communicator. The ranks
  // agree whether SIGINT or SIGTERM reached any of them (MpiSession::any_on_arrival, timed by
  // --timeout: no rank lost between two cases holds the others); nullptr, and nothing made, when
  // one did. Then `make` (MpiRun::communicator) runs under the watchdog as a phase without calls:
  // a communicator's set-up is collective too (an MPI_Comm_split for a new group size, NCCL's id
  // broadcast and init). A signal that outlives the grace meanwhile ends the job as inside a
  // case (watch_interrupt).
  Communicator* start_case(const std::string& label, const std::function<Communicator&()>& make);
  // The collectives of the run's start, before the first case (the backend choice, where every
  // rank runs, rank 0's report folder, the rank table): each `step` runs under the watchdog as a
  // phase without calls, with --timeout of its own, so that a rank lost there is named within
  // --timeout instead of holding the others until mpirun's own limit. The guard stays armed until
  // the next step, the first start_case or end_start_up.
  void guard_start_up(const std::string& step);
  void end_start_up() { watchdog_.disarm(); }
  // After the last case, on every rank: MPI_Finalize waits for every other rank, untimed, so each
  // checks in with rank 0 first (an arrival check, --timeout): a rank lost after the last row is
  // named and the job ended, instead of holding the others until mpirun's own limit.
  void end_run();

 private:
  double combine(const std::vector<double>& rank_times_us) const;  // as --average says
  // Time and check the call; they throw what the library throws (run() handles it).
  void measure(Communicator& comm, const CollCall& call, CollResult& r);
  void verify(Communicator& comm, const CollCall& call, CollResult& r);
  // The guard of a phase of `calls` calls: the job ends when none of its calls has completed
  // for --timeout + the calls between two progress marks x the slowest time per call seen so far
  // in the case; the calls are issued `at_once` at a time (-n per CUDA-graph replay), which sets
  // how often they are marked (Communicator::calls_per_mark).
  void arm_phase(const std::string& phase, int calls, int at_once = 1);
  // The guard's thread, about to end the process on a hang: the running case's communicator
  // stops its device work (Communicator::abandon), if a case is running.
  void abandon_communicator();
  // SIGINT/SIGTERM while the case runs: it has a few seconds to end, then the watchdog writes it
  // as a failed `interrupted:` row (rank 0) and ends the process with the interrupt's status.
  void watch_interrupt(const std::string& label);
  void warn_if_close_to_timeout(const std::vector<double>& rank_times_us = {});
  // What the watchdog's messages name from here: the case `label`, its clock started now, no
  // time per call yet (the set-up before a case, then the case itself).
  void begin_guarded(const std::string& label);
  // Test only: --test-stall-rank stops here for --test-stall-seconds, once in the run, when
  // `point` is the one --test-stall-at asked for.
  void stall_for_test(StallPoint point);

  MpiSession& session_;
  CollRunOptions options_;
  Watchdog watchdog_;
  bool stalled_ = false, failed_for_test_ = false;
  std::size_t cases_started_ = 0;  // start_case calls so far
  std::string label_;              // the case running now, for the watchdog's message
  std::chrono::steady_clock::time_point case_start_;  // when it started, likewise
  double per_call_s_ = 0;         // the slowest time per call seen in this case (0: none yet)
  std::mutex comm_mutex_;         // the main thread sets comm_ for a case; the guard may abandon it
  Communicator* comm_ = nullptr;  // the running case's communicator
};

}  // namespace opbench
