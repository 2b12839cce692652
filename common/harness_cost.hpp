#pragma once
// Where a run's wall time went, beyond the timed samples: time to the first result, and per case
// the warm-up, the untimed work between samples (buffer rotation, cache flushes) and everything
// else (allocation, input fills, descriptors, heuristics and plan choice, verification). Printed
// at the end of a run and in --summary-path, and each row's share is in its JSON line.
#include <nlohmann/json.hpp>

#include <string>

#include "common/measure.hpp"
#include "common/timer.hpp"

namespace opbench {

class HarnessCost {
 public:
  // The clock starts here: construct it first thing in main.
  HarnessCost() = default;

  // One case: its whole wall time, and the time its samples measured (summed) and the wall
  // time its warm-up and sampling loops took. Returns the case's JSON for its row.
  nlohmann::json add_case(double case_s, const Measurement& m);
  // Call once a result is on disk; the first call fixes the time to first result.
  void result_written();

  // "first result after 0.8 s; 12 cases in 95 s: timed samples 80.1 s (84%), ..."
  std::string text() const;
  // The same as a Markdown section (one block, a table) for --summary-path.
  std::string markdown() const;

 private:
  CpuTimer clock_;
  double first_result_s_ = -1;
  int cases_ = 0;
  double case_s_ = 0, timed_s_ = 0, warmup_s_ = 0, between_s_ = 0;
};

}  // namespace opbench
