#pragma once
// One trace file turned into the capture library's per-shape table (capture/table.hpp), keyed
// and written exactly as a capture is, so that a converted trace is read wherever a capture is
// (bench_gemm, bench_attention, bench_ccl and bench_step --trace-path, capture_summary.py).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "capture/output.hpp"
#include "capture/table.hpp"
#include "trace/op_shapes.hpp"

namespace opbench::trace {

// The communicator size to take for a call whose trace does not record its group (an execution
// trace's c10d calls, a record_param_comms without "Group size"): a profiler trace's
// distributedInfo world_size, else the number of distinct ranks among the traces read together.
struct World {
  int size = 1;
  std::string from;  // where `size` comes from, for the table's note
};

class TraceTable {
 public:
  TraceTable();

  capture::ProcessFacts facts;     // host, rank, pid; `source` says where the times come from
  std::string path;                // the trace file
  std::uint64_t steps = 0;         // ProfilerStep markers in the trace; 0 when it has none
  std::vector<std::string> notes;  // what the table cannot say exactly, for the summary

  // A name that lives as long as the table (keys hold plain pointers).
  const char* name(std::string_view text);

  void record(const capture::CaptureKey& key, double ns) { table_->record(key, ns); }
  void record_untimed(const capture::CaptureKey& key, capture::Untimed why) {
    table_->record_untimed(key, why);
  }
  std::vector<capture::TableRow> rows() const { return table_->snapshot(); }
  // The capture library's CSV and JSON-lines text of the table.
  std::string csv() const;
  std::string jsonl() const;

  // Keys of each family, their text fields interned here.
  capture::CaptureKey gemm_key(std::string_view api, const GemmCall& g);
  capture::CaptureKey attention_key(std::string_view api, const AttentionCall& a);
  // comm_stride: how far apart the group's ranks are, 0 where the trace does not say (1 for a
  // group of one, whose ranks are trivially consecutive).
  capture::CaptureKey comm_key(std::string_view api, const CommCall& c, int comm_size,
                               int comm_stride);
  // What no benchmark replays: kind "memory_bound", "other" or "idle", keyed by the operator.
  capture::CaptureKey unreplayed_key(std::string_view api, const char* kind);

  // A matrix product or attention call in a dtype opbench does not benchmark (`type` as the
  // trace names it: gemm_call's or attention_call's unknown_type): not replayed, its time the
  // operator's own row. The reader counts each, and note_unknown_dtypes says so in the notes as
  // it finishes.
  void count_unknown_dtype(std::string_view api, std::string_view type);
  void note_unknown_dtypes();

 private:
  std::map<std::pair<std::string, std::string>, std::uint64_t> unknown_dtypes_;
  std::unordered_set<std::string> names_;
  std::unique_ptr<capture::ShapeTable> table_;
};

}  // namespace opbench::trace
