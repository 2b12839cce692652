#pragma once
// The per-shape tables of a capture folder (scripts/capture.sh --out; the capture library's CSV,
// docs/outputs.md#capture-files-libopbench_captureso), read back for the replays: bench_gemm and
// bench_ccl --capture-path take the shapes a job ran from here, each family keying them its own
// way. Every capture-*.csv of the folder is merged, or one rank's alone.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace opbench {

class Record;

struct CapturedShape {
  std::vector<std::string> key;  // the cells of the key columns, in the order asked for
  std::int64_t calls = 0;        // summed over the files
  std::int64_t timed_calls = 0;
  double total_us = 0;  // the timed calls'
  // The shape's time in the job: total_us, and the calls the GPU sampling left untimed at their
  // row's mean (common/job_time.hpp)
  double job_us = 0;
  std::int64_t tables = 0;  // the tables (processes, ranks) that made these calls
  // The job's average time of one call: total over the timed calls (nullopt when none was timed).
  std::optional<double> in_job_us() const;
};

// Where a real job's shapes come from: a capture folder (--capture-path), or a profiler trace
// converted in memory into the capture's own tables (--trace-path; trace/trace_source.hpp).
struct ShapeSource {
  std::string flag = "--capture-path";  // the flag that named it, for messages
  std::string path;
  // A converted trace's tables: (name, CSV text); empty for a capture folder, whose files are read
  std::vector<std::pair<std::string, std::string>> tables;
  // A converted trace's notes, "<trace file>: <note>": what its reader could not say exactly (an
  // assumed group size, calls in a dtype opbench does not benchmark), as trace_convert prints them
  std::vector<std::string> notes;

  static ShapeSource capture_folder(std::string dir) {
    return {"--capture-path", std::move(dir), {}, {}};
  }
  bool empty() const { return path.empty(); }
};

// Prints `source`'s notes on stderr, a line each ("note: --trace-path FILE: ..."): a replay of a
// trace says what trace_convert would.
void print_source_notes(const ShapeSource& source);

struct CaptureQuery {
  ShapeSource source;                    // the capture folder or the converted trace
  std::optional<int> rank;               // only that rank's rows (--rank); all when not given
  std::vector<std::string> kinds;        // rows of these kinds: "gemm", "collective", "p2p"
  std::vector<std::string> key_columns;  // what makes two rows one shape
};

// The rows of the asked kinds merged by their key (calls, timed calls and total time summed),
// largest in-job total first. bad_input naming the flag, file, row and column when the folder,
// its files or their cells are not a capture's (every row of every file is checked against the
// rules of common/capture_rows.hpp, whatever the query keeps), or --rank names a rank no file has.
// A key column comm_stride left empty by the capture (an NCCL communicator) reads as the stride
// of the ranks whose files hold the row's comm_id, where every member's file is read.
std::vector<CapturedShape> read_capture_shapes(const CaptureQuery& query);

// What a replayed case keeps of the job: the API or operator, its calls and in-job average.
struct CapturedCall {
  std::string api;                  // sgemm_, cublasLtMatmul, aten::mm, MPI_Allreduce, ...
  std::int64_t calls = 0;           // over the merged tables
  std::optional<double> in_job_us;  // Σ total_us / Σ timed_calls; none when no call was timed
  // This run's case is the call as the job ran it. False when it runs in another dtype
  // (bench_attention's --dtype, or fp32 on the CPU): a time in another dtype says nothing of how
  // the job's call fared, so in_job_ratio stays empty.
  bool as_job_ran = true;
};

// The job's figures beside this run's, on a replayed case's row: captured_calls, in_job_us and
// in_job_ratio = in_job_us / `measured_us` (above 1, the job's calls were slower than alone;
// empty unless the case ran `as_job_ran`).
void add_in_job_columns(Record& row, const CapturedCall& job, std::optional<double> measured_us);

}  // namespace opbench
