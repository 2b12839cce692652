#pragma once
// The rules every capture file (capture-*.csv, docs/outputs.md#capture-files-libopbench_captureso)
// obeys, for everything that reads one back: bench_gemm, bench_ccl and bench_step --capture-path
// (common/capture_tables) and scripts/capture_summary.py. A file that breaks one is refused whole,
// with bad_input "<file> row <r> <column>: ...": a reader that skipped the row, or read it as it
// stands, would report a figure from a table nobody can trust (a timed_calls above calls divides
// the job's time by the wrong count).
//
// capture_summary.py is Python and keeps its own copy of these rules, in the same order and with
// the same messages; tests/integration/bad_capture_corpus.py feeds both the files of
// tests/data/bad_capture/ and requires the same line from each. Change both, or neither.
#include <map>
#include <string>
#include <vector>

namespace opbench {

// One row of a capture file: its cells by column name.
using CaptureRow = std::map<std::string, std::string>;

// The rows of the capture file at `path`, every rule checked. Row 1 is the first after the header.
std::vector<CaptureRow> read_capture_file(const std::string& path);

// The same rules on a table already read (read_csv's rows, the header first), named `path` in the
// messages.
std::vector<CaptureRow> check_capture_table(const std::string& path,
                                            const std::vector<std::vector<std::string>>& table);

}  // namespace opbench
