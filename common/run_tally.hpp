#pragma once
// How a run went, counted the same way in every binary, and the lines it ends with. The
// progress lines, the closing lines on stderr, summary.md and the exit code all read one tally,
// so they cannot disagree ("8 cases, 0 failed" after 5 of 8 ran).
//
// Exit codes (docs/outputs.md): 0 every case ran (ok, or some skipped); 1 a case failed;
// 2 bad input (before anything ran); 3 nothing ran: every case was skipped; 130 / 143 the run
// was interrupted by SIGINT / SIGTERM (finished rows are in the reports).
#include <cstddef>
#include <string>
#include <vector>

#include "common/record.hpp"

namespace opbench {

inline constexpr int kExitNothingRan = 3;

struct RunTally {
  std::size_t planned = 0;  // cases this run was asked for
  std::size_t ok = 0, noisy = 0, skipped = 0, failed = 0;
  std::size_t earlier = 0;  // --resume: cases of this run the reports held already
  std::size_t carried = 0;  // --resume: rows the reports held, of this run's cases or others

  void add(const Record& row);          // a row this run wrote
  void add_earlier(const Record& row);  // a case of this run found in the report (its row)
  std::size_t finished() const { return ok + skipped + failed; }
  // "5 of 8 cases: 4 ok (2 noisy), 1 skipped, 0 failed" (+ ", 3 of them from the run continued
  // (--resume)", + "; the reports also hold 10 rows of cases outside this run")
  std::string line() const;
  // "3 ok (1 noisy), 1 skipped, 0 failed" for one line of progress or a summary.
  std::string counts() const;
};

struct RunEnd {
  std::string harness;             // the harness-cost line (HarnessCost::text)
  std::string report_dir;          // where the reports are
  std::vector<std::string> files;  // "path (N rows)" lines
  bool resumable = false;          // the binary offers --resume
};

// How the run ended, in one line, for environment.json's "outcome" (where the closing lines may
// reach nobody: a launcher gone): "interrupted: 5 of 8 cases: ...", "failed: ...",
// "nothing ran: ...", "ok: ...", each with RunTally::line().
std::string run_outcome(const RunTally& tally, bool interrupted);

// Prints the closing lines on stderr — the harness cost, the tally with where the reports are,
// the files, and last the verdict when it is not plain success (interrupted, nothing ran,
// failed) — and returns the exit code.
int finish_run(const RunTally& tally, const RunEnd& end, bool interrupted, int interrupted_code);

}  // namespace opbench
