#pragma once
// Where an operator's time comes from: rows of earlier reports of bench_gemm, bench_attention,
// bench_memops, bench_ccl and bench_fsdp (a GPU run's reports project on any machine), matched to
// an operator by the arguments that decide its time. bench_step --measure writes its own
// measurements as such reports first, so both paths read times the same way.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "step/step_operator.hpp"

namespace opbench {

struct OperatorTime {
  double time_us = 0;  // per call: the row's time_us (the mean over its samples)
  std::string source;  // "DIR/gemm_step.csv line 12", or how it was interpolated
  std::string device;  // the row's device column
  std::optional<double> rse;
  // Where the time is from: "measured" (this run, bench_step --measure), "reports" (the folders of
  // --from-reports), "captured" (the job's own calls, --capture-path).
  std::string origin = "reports";
  std::optional<double> cv = std::nullopt;  // the spread of the row's samples (stddev / mean)
};

class ReportTimes {
 public:
  // Reads every report CSV found directly in each folder (gemm_*.csv, attention*.csv,
  // memops_*.csv, ccl_*.csv, fsdp*.csv, by their header rather than their name); rows with a
  // status other than ok are ignored. A later folder's row wins over an earlier one's for the
  // same arguments. A folder that does not exist or holds no report is a bad_input error naming it.
  // Rows of the folder `measured_dir` (bench_step's own measurement) say so in their origin.
  static ReportTimes load(const std::vector<std::string>& dirs,
                          const std::string& measured_dir = "");

  // The time of `op`, or nullopt when no ok row has its arguments.
  std::optional<OperatorTime> find(const StepOperator& op) const;

  std::size_t rows() const;                       // ok rows indexed
  const std::vector<std::string>& files() const;  // report files read

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace opbench
