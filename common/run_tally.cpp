#include "common/run_tally.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "common/error.hpp"

namespace opbench {

void RunTally::add(const Record& row) {
  const auto* s = row.get<std::string>("status");
  if (!s || *s == "failed")
    ++failed;
  else if (*s == "skipped")
    ++skipped;
  else
    ++ok;
  noisy += is_noisy(row);
}

void RunTally::add_earlier(const Record& row) {
  add(row);
  ++earlier;
}

std::string RunTally::counts() const {
  return fmt::format("{} ok{}, {} skipped, {} failed", ok,
                     noisy ? fmt::format(" ({} noisy)", noisy) : std::string(), skipped, failed);
}

std::string RunTally::line() const {
  const std::size_t outside = carried > earlier ? carried - earlier : 0;
  return fmt::format(
      "{} of {} cases: {}{}{}", finished(), planned, counts(),
      earlier ? fmt::format(", {} of them from the run continued (--resume)", earlier)
              : std::string(),
      outside ? fmt::format("; the reports also hold {} row{} of cases outside this run", outside,
                            outside == 1 ? "" : "s")
              : std::string());
}

std::string run_outcome(const RunTally& tally, bool interrupted) {
  const char* how = interrupted     ? "interrupted"
                    : tally.failed  ? "failed"
                    : tally.ok == 0 ? "nothing ran"
                                    : "ok";
  return fmt::format("{}: {}", how, tally.line());
}

int finish_run(const RunTally& tally, const RunEnd& end, bool interrupted, int interrupted_code) {
  if (!end.harness.empty()) std::fprintf(stderr, "%s\n", end.harness.c_str());
  if (end.files.empty())  // stopped before a row: no report is made empty (common/report.hpp)
    std::fprintf(stderr, "%s; no report file in %s (each is made with its first row)\n",
                 tally.line().c_str(), end.report_dir.c_str());
  else
    std::fprintf(stderr, "%s. Reports in %s:\n", tally.line().c_str(), end.report_dir.c_str());
  for (const auto& f : end.files)
    std::fprintf(stderr, "  %s\n", f.c_str());
  if (tally.noisy)
    std::fprintf(stderr,
                 "%zu noisy row%s: the mean is less certain than --max-noise asks (rse column); "
                 "compare them with care, or give --max-time more\n",
                 tally.noisy, tally.noisy > 1 ? "s" : "");
  if (interrupted) {
    std::fprintf(stderr,
                 "interrupted after %zu of %zu cases; every finished case is in the reports%s\n",
                 tally.finished(), tally.planned, end.resumable ? " (continue with --resume)" : "");
    return interrupted_code;
  }
  if (tally.failed) {
    std::fprintf(stderr, "failed: %zu case%s failed (status and note in the reports)\n",
                 tally.failed, tally.failed > 1 ? "s" : "");
    return static_cast<int>(ExitCode::run_failed);
  }
  if (tally.ok == 0) {
    std::fprintf(stderr,
                 "nothing ran: every case was skipped (the note column says why); exit code %d\n",
                 kExitNothingRan);
    return kExitNothingRan;
  }
  return 0;
}

}  // namespace opbench
