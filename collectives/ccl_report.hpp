#pragma once
// bench_ccl's rows (CSV / JSON lines), its report files and the nccl-tests-style table on stdout.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectives/ccl_options.hpp"
#include "collectives/coll_runner.hpp"
#include "collectives/communicator.hpp"
#include "common/case_loop.hpp"
#include "common/record.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"

namespace opbench {

struct CclCase {
  CollOp op;
  DType dtype;
  RedOp redop;
  int root;
  std::uint64_t size_bytes;  // requested; the row reports the size actually run
  Placement placement;
  int group_size;
  std::string label;  // model messages: what it stands for
  std::int64_t calls_per_step = 0;
  int stride = 1;  // the group's ranks this far apart (collectives/rank_groups.hpp)
  // --capture-path: the job's calls and average time of this message (in_job_us, in_job_ratio)
  bool captured = false;
  std::int64_t captured_calls = 0;
  std::optional<double> in_job_us = std::nullopt;
};

struct CclContext {
  std::string backend;
  int world_size = 1, nodes = 1;
  int iters = 0;
  RankAggregation aggregation = RankAggregation::mean;
  std::vector<std::string> hosts;  // every rank's host, by world rank: the layout
};

// The layout facts of a row: ranks per node (least and most; equal when the layout is even),
// and whether the groups of a case stay inside one node: "no" (every group inside a node),
// "yes" (every group spans nodes) or "some", the groups of `size` ranks `stride` apart
// (collectives/rank_groups.hpp).
struct Layout {
  int ranks_per_node_min = 1, ranks_per_node_max = 1;
  std::string group_spans_nodes = "no";
};
Layout layout_of(const std::vector<std::string>& hosts, int group_size, int stride = 1);

Record ccl_row(const CclCase& c, const CollCall& call, const CollResult& r, const CclContext& ctx);

// Prints rows the way nccl-tests does: one line per size with out-of-place then in-place
// columns, a header per op and dtype, and the average bus bandwidth at the end. Everything it
// prints comes from the rows (ccl_row's columns), as CaseLoop hands them over.
class NcclTestsTable : public RowTable {
 public:
  NcclTestsTable(bool per_iter, std::size_t placements, std::FILE* out = stdout)
      : per_iter_(per_iter), placements_(placements), out_(out) {}
  void print(const Record& row) override;
  void finish();  // prints any pending line and the footer

 private:
  void header(const Record& row);
  void footer();
  void flush_line();
  bool per_iter_;
  std::size_t placements_, cells_filled_ = 0;
  std::FILE* out_;
  std::string section_, line_prefix_, line_key_;
  std::string cells_[2];
  double busbw_sum_ = 0;
  int busbw_count_ = 0;
  std::int64_t wrong_total_ = 0;
  int failed_rows_ = 0;
  std::string op_;
};

// The report files: one per op in the report folder (DIR/ccl_<op>.csv, .jsonl, .prom, a
// ReportSets keyed by the op), each opened at its op's first row, and --report-csv-path's one CSV
// of every row. Rank 0's alone.
class CclReports : public RowSink {
 public:
  // `run`: the run id and rank map, in every JSON line; `loop`: the cases' (ReportSets).
  CclReports(const CclOptions& o, const std::string& dir, nlohmann::json run, CaseLoop& loop);
  // To the op's report (the row's "op") and --report-csv-path's.
  void write(const Record& row) override;
  // "path (N rows)" for every file written, for the closing lines (none before the first row).
  std::vector<std::string> listing() const;

 private:
  std::unique_ptr<CsvWriter> all_;
  ReportSets per_op_;
};

}  // namespace opbench
