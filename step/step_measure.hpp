#pragma once
// bench_step --measure: the operators of a step that no report times yet, measured through the
// families' own providers under the shared stop rule and written as the families' own reports
// (gemm_step.csv, attention_step.csv, memops_step.csv), which ReportTimes then reads like any
// other. Collectives are not measured here: they need ranks (bench_ccl under mpirun).
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/env.hpp"
#include "common/measure.hpp"
#include "common/report_files.hpp"
#include "step/step_operator.hpp"

namespace opbench {

struct StepMeasureOptions {
  std::string model;             // the rows' model column
  std::string backend = "auto";  // --backend
  int device = 0;
  MeasureOverrides measure;  // the shared stop rule's flags
  bool check = false;        // verify each result as the families' --check do
  bool quiet = false;
  unsigned threads = 0;       // --threads: our CPU loops' threads (0: the affinity mask's cores)
  unsigned blas_threads = 0;  // --blas-threads: OpenBLAS's threads (0: the affinity mask's cores)
  // The measured operators' reports' formats (gemm_step.csv ...): --format, and CSV always, the
  // format bench_step reads its times back from.
  std::set<ReportFormat> formats{ReportFormat::csv, ReportFormat::jsonl};
};

struct StepMeasureResult {
  std::size_t measured = 0, skipped = 0, failed = 0;
  std::vector<std::string> files;  // "path (N rows)"
  std::string device;              // what the operators ran on
  std::string threading;           // on the CPU: cpu_threading_note
  bool interrupted = false;
};

// What --threads means for a CPU measurement, and how it differs from a framework's threading.
std::string cpu_threading_note(unsigned threads, unsigned blas_threads);

// Measures, once each (by StepOperator::identity()), every operator of `ops` but the collectives
// for which `has_time` is false.
StepMeasureResult measure_step_operators(const std::vector<StepOperator>& ops,
                                         const std::function<bool(const StepOperator&)>& has_time,
                                         const StepMeasureOptions& options,
                                         const std::string& report_dir, Environment& env);

}  // namespace opbench
