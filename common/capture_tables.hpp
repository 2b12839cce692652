#pragma once
// The per-shape tables of a capture folder (scripts/capture.sh --out; the capture library's CSV,
// docs/outputs.md#capture-files-libopbench_captureso), read back for the replays: bench_gemm and
// bench_ccl --capture-path take the shapes a job ran from here, each family keying them its own
// way. Every capture-*.csv of the folder is merged, or one rank's alone.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opbench {

struct CapturedShape {
  std::vector<std::string> key;  // the cells of the key columns, in the order asked for
  std::int64_t calls = 0;        // summed over the files
  std::int64_t timed_calls = 0;
  double total_us = 0;
  // The job's average time of one call: total over the timed calls (nullopt when none was timed).
  std::optional<double> in_job_us() const;
};

struct CaptureQuery {
  std::string dir;                       // the capture folder (--capture-path)
  std::optional<int> rank;               // only that rank's rows (--rank); all when not given
  std::vector<std::string> kinds;        // rows of these kinds: "gemm", "collective", "p2p"
  std::vector<std::string> key_columns;  // what makes two rows one shape
};

// The rows of the asked kinds merged by their key (calls, timed calls and total time summed),
// largest in-job total first. bad_input naming the flag, file, row and column when the folder,
// its files or their cells are not a capture's (every row of every file is checked against the
// rules of common/capture_rows.hpp, whatever the query keeps), or --rank names a rank no file has.
std::vector<CapturedShape> read_capture_shapes(const CaptureQuery& query);

}  // namespace opbench
