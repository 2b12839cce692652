#pragma once
// bench_fsdp's tables and files: the plan (console table, CSV), the NCCL log histogram with each
// logged call matched to the plan, a replay's report files and its per-step communication
// estimate.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/record.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
#include "fsdp/fsdp_options.hpp"
#include "fsdp/fsdp_plan.hpp"
#include "fsdp/nccl_log.hpp"

namespace opbench {

void print_plan(const std::vector<PlanEntry>& plan, const FsdpOptions& o, std::FILE* out);
void write_plan_csv(const std::vector<PlanEntry>& plan, const FsdpOptions& o,
                    const std::string& path);
// The nccl-tests command lines that measure the plan's distinct collectives.
void print_nccl_tests_commands(const std::vector<PlanEntry>& plan, RedOp reduce_op, std::FILE* out);
// The histogram of logged calls; with a plan, each call's nearest predicted collective and the
// difference in elements and percent.
void print_log_summary(const NcclLogSummary& log, const std::vector<PlanEntry>* plan,
                       std::FILE* out);

// DIR/fsdp.csv, .jsonl and .prom with every row, and one CSV per collective at the path its flag
// names (else DIR/fsdp_<op>.csv, with the csv format), opened at its first row: a collective the
// plan lacks (all_reduce without HSDP) leaves no empty file.
class FsdpReports : public RowSink {
 public:
  // `run`: the run id and rank map, in every JSON line.
  FsdpReports(const FsdpOptions& o, const std::string& dir, nlohmann::json run);
  // Written (and flushed) to every report at once: the row's collective's (its "op") and
  // fsdp.csv.
  void write(const Record& row) override;
  // "path (N rows)" for every file, and the per-collective CSVs the plan left unwritten.
  std::vector<std::string> listing() const;

 private:
  ReportFiles files_;
  std::map<CollOp, std::string> csv_path_;
  std::map<CollOp, std::unique_ptr<CsvWriter>> csv_;
};

// The communication of one training step: each entry's calls per step x its measured time, summed
// per collective and phase, without overlap.
class StepEstimate {
 public:
  void add(CollOp op, const std::string& phase, double us);
  void print(std::FILE* out) const;
  std::string markdown() const;  // for --summary-path

 private:
  std::map<std::string, double> us_;  // "all_gather forward"
  double total_us_ = 0;
};

}  // namespace opbench
