#pragma once
// What every binary that measures one case at a time does with each case, written once: skip
// what --resume finds in the report, show progress, run the case (a skipped row when the provider
// cannot, a failed row when it throws), write the row the moment it exists, print it and count it.
// Every binary runs its cases through it: bench_ccl and bench_fsdp, whose cases run on every rank,
// on rank 0 through collectives/mpi_run (MpiRun::run_case), which the other ranks join.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/harness_cost.hpp"
#include "common/interrupt.hpp"
#include "common/measure.hpp"
#include "common/progress.hpp"
#include "common/record.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
#include "common/resume.hpp"
#include "common/run_tally.hpp"

namespace opbench {

// A case's row, with the measurement behind it (for the harness cost) and its progress line.
struct MeasuredRow {
  Record row;
  Measurement measurement;
  std::string progress;  // "label  12.3 ms  187 GB/s", or the status and note
};

class CaseLoop {
 public:
  // `table`: where rows are printed as they come (nullptr: not printed; bench_fsdp sums them up
  // at the end). `stop`: whether no case may start any more; a signal has come, unless the
  // binary agrees on that elsewhere (every rank of an MPI run before each case).
  CaseLoop(Progress& progress, RowTable* table, HarnessCost& harness, RunTally& tally,
           std::vector<Record>& rows, std::function<bool()> stop = interrupted)
      : progress_(progress),
        table_(table),
        harness_(harness),
        tally_(tally),
        rows_(rows),
        stop_(std::move(stop)) {}

  // --resume: the rows the report holds (read back shaped like `like`) count, and stay in the
  // report's .prom and the summary.
  void carry_earlier(ReportFiles& files, const FinishedCases& finished, const Record& like);

  // Runs one case unless the report holds it already (`earlier`: that row's status and note,
  // from FinishedCases::earlier); false when the run has been interrupted and no case may start.
  bool run(const std::string& label, double work, RowSink& files,
           const std::optional<Record>& earlier, const std::function<MeasuredRow()>& measure);

  // A row without a measurement of its own, written, kept, printed and counted as a case's: a
  // later plan entry that shares a measured collective (bench_fsdp), or the failed row of a case
  // that a hang or a signal ended, written by the thread that ends the job.
  void add_row(RowSink& files, const Record& row);

 private:
  Progress& progress_;
  RowTable* table_;
  HarnessCost& harness_;
  RunTally& tally_;
  std::vector<Record>& rows_;
  std::function<bool()> stop_;
};

// The report files of a run with several reports (bench_gemm and bench_memops: one per model,
// shapes file or sweep; bench_step: one per family; bench_ccl: one per op), each opened when its
// first case comes. On --resume each continues the
// earlier run's files and carries their rows into the loop, so the .prom, the counts and the
// summary cover both runs.
class ReportSets {
 public:
  // Files are DIR/<prefix>_<key>.csv (.jsonl, .prom); `metric_prefix` names the .prom metrics.
  ReportSets(std::string dir, std::string prefix, const ReportOptions& report, nlohmann::json run,
             std::string metric_prefix, CaseLoop& loop);
  // The files of report `key`; `like` is a row of the binary (its columns make the CSV's
  // header, written at once), to read earlier rows back with.
  ReportFiles& open(const std::string& key, const Record& like);
  // --resume: report `key`'s (opened) row of the case of `row`, when it holds it already.
  std::optional<Record> earlier(const std::string& key, const Record& row) const;
  // "path (N rows)" for every file of every report, in the order they were opened, for the
  // closing lines.
  std::vector<std::string> listing() const;

 private:
  std::string dir_, prefix_, metric_prefix_;
  const ReportOptions& report_;
  nlohmann::json run_;
  CaseLoop& loop_;
  std::map<std::string, std::unique_ptr<ReportFiles>> files_;
  std::vector<const ReportFiles*> opened_;  // files_, in the order the cases opened them
  std::map<std::string, FinishedCases> finished_;
};

// A provider's run, guarded: `unsupported` makes a skipped result with that note, an Error thrown
// by the run a failed one (bad input still ends the run: it is the user's to fix). R has
// `status` and `note`.
template <typename R, typename Run>
R guarded_result(const std::optional<std::string>& unsupported, Run&& run) {
  R r;
  if (unsupported) {
    r.status = Status::skipped;
    r.note = *unsupported;
    return r;
  }
  try {
    r = run();
  } catch (const Error& e) {
    if (e.code() == ExitCode::bad_input) throw;
    r = R{};
    r.status = Status::failed;
    r.note = e.what();
  }
  return r;
}

}  // namespace opbench
