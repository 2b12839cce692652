#pragma once
// The MPI side of a run of collectives, written once for bench_ccl and bench_fsdp (each keeps its
// cases, rows and tables): where every rank runs (environment.json's rank map and each host's
// load), the rank table on stdout, rank 0's report folder (every rank learns whether it could be
// written before any case runs), a communicator per group, each case under the hang guard
// (CollRunner) and the abort hook, the stop every rank agrees on between cases, and the run's end
// — after the last case, or from the thread that ends the job inside one. Rank 0 alone prints
// results and writes reports, through the case loop every binary shares (common/case_loop): the
// other ranks join each case's collective.
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/backend_select.hpp"
#include "collectives/ccl_report.hpp"
#include "collectives/coll_runner.hpp"
#include "collectives/communicator.hpp"
#include "collectives/mpi_session.hpp"
#include "collectives/rank_load.hpp"
#include "common/case_loop.hpp"
#include "common/env.hpp"
#include "common/owned_files.hpp"

namespace opbench {

// One case of collectives: the groups it runs in and the call.
struct MpiCase {
  int group_size = 1;
  int stride = 1;  // the group's ranks this far apart (collectives/rank_groups.hpp)
  std::optional<std::size_t> reserve_bytes;  // buffers for the largest call of these groups
  CollCall call;
  std::string label;  // for progress and the hang guard's messages
};

// Rank 0's row of a case's result, with its progress line (and measurement_of the result).
using CollRow = std::function<MeasuredRow(const CollResult& r)>;

// A collective's result as the case loop's Measurement, for the harness cost and the ETA: each
// sample of -n calls is one run (its time the calls'), or with --per-iter each timed call.
Measurement measurement_of(const CollResult& r, int iters);

class MpiRun {
 public:
  // Chooses the backend `request` asks for (choose_ccl_backend; -G needs NCCL) and starts the
  // run's environment.json facts (`binary`'s command line, the backend, the world and every
  // rank's place and host load). Collective: every rank constructs it at the same point. From
  // here to the first case every collective of the run's start is a step under the hang guard
  // (CollRunner::guard_start_up), named in its timeout line.
  MpiRun(MpiSession& session, const CclBackendRequest& request, const CollRunOptions& run, int argc,
         char** argv, const std::string& binary);
  MpiRun(const MpiRun&) = delete;
  MpiRun& operator=(const MpiRun&) = delete;

  bool lead() const { return session_.world_rank() == 0; }
  MpiSession& session() { return session_; }
  const CclBackend& backend() const { return backend_; }
  Environment& env() { return env_; }
  // {"run_id", "ranks"}: the run's facts in every JSON line.
  nlohmann::json run_facts() const;
  // The backend, the world, its layout and the timing flags, for every row (ccl_row).
  const CclContext& context() const { return context_; }

  // Rank 0: the line that says the ranks outnumber a host's CPUs, when they do. Said even with
  // --quiet: it changes what every figure of the run means.
  void note_rank_load() const;
  // `header`, then nccl-tests' device line of every rank (describe_rank), on rank 0's stdout.
  // Collective.
  void print_rank_table(const std::string& header, int group_size);
  // Rank 0 makes the report folder `dir`, sets aside an earlier run's files there and the
  // `named` outputs an earlier run wrote, writes environment.json and calls `open` for the
  // binary's own files. An error on the way is every rank's bad input, before any case runs.
  // Collective.
  void open_reports(const std::string& dir, const std::vector<NamedOutput>& named,
                    const std::function<void()>& open);

  // Rank 0's end of the run (the binary's last lines, environment.json's end_time, the summary
  // and the closing lines; close_run), returning the exit code: called by finish() after the last
  // case, or by the thread that ends the job inside a case.
  void on_close(std::function<int(bool stopped)> close) { close_ = std::move(close); }
  // The communicator of this rank's group of `g` (collectives/rank_groups.hpp), made at its first
  // case and again after an error aborted it; `reserve_bytes` sizes its buffers for the largest
  // call it will make.
  Communicator& communicator(RankGroups g, std::optional<std::size_t> reserve_bytes = std::nullopt);
  // Runs case `c` on every rank; false on every rank, and nothing run, once SIGINT or SIGTERM has
  // reached any rank (mpirun passes a signal on to the ranks maybe not at once), so that every
  // rank stops before the same case. That agreement is an arrival check (--timeout): a rank that
  // does not come to it is named, the case written as a failed row, and the job ended. Rank 0 runs
  // it through `loop` (progress, the harness cost, `row`'s row written to `reports`, printed and
  // counted); the other ranks, whose `reports` is null, join the collective. Should a timeout, an
  // interrupt or a lost rank end the job inside the case, rank 0 adds `row` of a failed result (the
  // reason its note) to the loop and closes the run as after its last case (the main thread is
  // stuck inside the case); the process then ends without the case's own row.
  bool run_case(const MpiCase& c, CaseLoop& loop, RowSink* reports, const CollRow& row);
  // The case loop for run_case: its stop check is run_case's, which every rank agrees on before
  // each case (a loop that stopped on rank 0's own signal would leave the other ranks inside the
  // collective).
  CaseLoop case_loop(Progress& progress, RowTable* table, HarnessCost& harness, RunTally& tally,
                     std::vector<Record>& rows) const;
  // The exit code after the cases: rank 0's close; on another rank, the stop's, or 1 when a case
  // failed (a rank that writes no rows still says so). Then every rank checks in at the run's
  // end under --timeout (CollRunner::end_run), before MPI_Finalize waits for them all.
  int finish();
  // The exit code of a run that stopped: the signal's, or SIGTERM's where the signal came to
  // another rank only.
  static int stopped_code();

 private:
  CclBackend choose_backend(const CclBackendRequest& request, int graph_replays);

  MpiSession& session_;
  // by their groups: the communicators outlive the runner, whose watchdog thread ends before
  // they go.
  std::map<RankGroups, std::unique_ptr<Communicator>> comms_;
  CollRunner runner_;  // before the backend: its watchdog guards the backend's choice
  CclBackend backend_;
  Environment env_;
  nlohmann::json rank_map_;  // every rank's host, pid, CPUs and device (rank 0)
  RankLoad load_;
  CclContext context_;
  std::function<int(bool)> close_;
  bool stopped_ = false;
  std::size_t failed_ = 0;  // cases that failed, on every rank
};

}  // namespace opbench
