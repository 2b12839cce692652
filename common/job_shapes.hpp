#pragma once
// --capture-path, --trace-path and --rank: a real job's shapes, for a replay (bench_gemm,
// bench_attention, bench_ccl) or a calibration (bench_step), spelled and checked alike in every
// binary. What the path holds is read by each family through common/capture_tables.hpp; a trace
// is converted into the capture's tables first (trace/trace_source.hpp).
#include <optional>
#include <string>
#include <string_view>

namespace cxxopts {
class Options;
class ParseResult;
}  // namespace cxxopts

namespace opbench {

struct JobShapesOptions {
  std::string capture_path;  // --capture-path: a capture folder (scripts/capture.sh --out)
  std::string trace_path;    // --trace-path: a PyTorch profiler or execution trace, file or folder
  std::optional<int> rank;   // --rank: only that rank's tables; every rank's merged when not given

  bool wanted() const { return !capture_path.empty() || !trace_path.empty(); }
  std::string flag() const { return trace_path.empty() ? "--capture-path" : "--trace-path"; }
  const std::string& path() const { return trace_path.empty() ? capture_path : trace_path; }
};

// Adds the flags to `group`; `what` says what the job's shapes are to this binary ("every GEMM
// shape the job ran, with its in-job time"). Without `with_rank`, no --rank.
void add_job_shapes_options(cxxopts::Options& options, const std::string& group,
                            std::string_view what, bool with_rank = true);
// bad_input when both paths are given, or --rank without either or below 0.
JobShapesOptions read_job_shapes_options(const cxxopts::ParseResult& parsed, bool with_rank = true);

}  // namespace opbench
