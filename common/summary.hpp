#pragma once
// --summary-path: a Markdown page a person reads first — what the run ran on (GPU, driver,
// library versions, CPU, host, command line, git revision, clocks where readable), how many cases
// were ok, skipped or failed, the best results by the binary's headline figure, and why any row
// was skipped or failed.
#include <string>
#include <vector>

#include "common/env.hpp"
#include "common/record.hpp"
#include "common/run_tally.hpp"

namespace opbench {

struct SummarySpec {
  std::string title;     // "bench_gemm: llama3.1-70b at tp 8"
  std::string headline;  // the figure results are ranked by: "tflops", "busbw_gbps"
  bool higher_is_better = true;
  std::vector<std::string> columns;  // what each result row shows
  std::size_t top = 15;
  std::vector<std::string> extra;  // more Markdown at the end (e.g. FSDP's per-step estimate)
  std::size_t planned = 0;         // cases the run was asked for (0: as many as rows)
  // The run's own tally, so the summary counts as the closing lines do (carried-over rows of
  // --resume included); without it the rows are counted.
  const RunTally* tally = nullptr;
  // What the first rows of that order are: "best" for a figure of merit, "longest" for bench_fsdp's
  // times (its summary lists where the step's communication goes, longest first).
  std::string first_are = "best";
};

std::string summary_markdown(const Environment& env, const std::vector<Record>& rows,
                             const SummarySpec& spec);
void write_summary(const std::string& path, const Environment& env, const std::vector<Record>& rows,
                   const SummarySpec& spec);

// The end every binary's run shares: environment.json completed in `report_dir`, the
// --summary-path page when one was asked (counted by the run's own tally, and planned as it
// planned), then the closing lines (finish_run); returns the exit code. `stopped_code` is the
// code of a run that was stopped (SIGINT, SIGTERM) before it finished.
int close_run(Environment& env, const std::string& report_dir, const std::string& summary_path,
              const std::vector<Record>& rows, SummarySpec summary, const RunTally& tally,
              const RunEnd& end, bool stopped, int stopped_code);

}  // namespace opbench
