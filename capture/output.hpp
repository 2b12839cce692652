#pragma once
// The capture's files: CSV (one row per key, the columns of docs/outputs.md#capture), JSON lines
// (the same rows and the process's facts) and a Prometheus textfile. Each is written to a
// temporary file in the same folder and renamed over the old one, so a reader (or a job killed
// mid-write) sees the previous tables or the new ones, never half a file.
#include <cstdint>
#include <string>
#include <vector>

#include "capture/table.hpp"

namespace opbench::capture {

struct ProcessFacts {
  std::string host;  // short host name
  std::string rank;  // from the launcher's variables; "" when none is set
  long pid = 0;
  std::string command;  // /proc/self/cmdline, spaces between the arguments
  std::string started;  // ISO 8601 UTC
  long parent_pid = 0;  // a child made by fork(): the capturing parent's pid; 0 otherwise
  // Where the rows come from: "capture" (the library), or a converted trace (trace/):
  // "trace:gpu" (kernel times), "trace:cpu" (operator times), "trace:et" (no times)
  std::string source = "capture";
  std::uint64_t forked_children = 0;  // fork() calls this process made so far
  // The library's GPU sampling (gpu_sampling.hpp): each shape's first calls timed, then one in
  // gpu_sample_one_in; 0 in a converted trace.
  std::uint64_t gpu_time_first = 0, gpu_sample_one_in = 0;
};

// The CSV header, the columns every row has.
std::string csv_header();
std::string csv_text(const ProcessFacts& facts, const std::vector<TableRow>& rows);
std::string jsonl_text(const ProcessFacts& facts, const std::vector<TableRow>& rows,
                       const std::string& written, bool final_write);
std::string prom_text(const ProcessFacts& facts, const std::vector<TableRow>& rows);

// "128x1024x256 NT" (bench_gemm's dims and layout) for a GEMM, "count=N comm_size=n redop=sum"
// for a collective, "b1 hq32 hkv8 sq4096 skv4096 d128/128 causal" for attention: the `shape`
// label of the Prometheus series.
std::string shape_label(const CaptureKey& key);
// A communicator's number as the files write it: 16 hex digits; empty for 0 (not known).
std::string comm_id_text(std::uint64_t id);

// Writes `text` to dir/name through dir/.name.tmp<pid> and rename(2); false with errno set on
// failure.
bool write_atomically(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace opbench::capture
