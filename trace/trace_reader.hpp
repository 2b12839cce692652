#pragma once
// A trace path (--trace-path): one file or a folder of per-rank files, PyTorch profiler
// (Kineto) or execution traces, plain or gzip, each turned into a per-shape table.
#include <memory>
#include <string>
#include <vector>

#include "trace/trace_table.hpp"

namespace opbench::trace {

// One table per rank's trace, in file-name order. The rank comes from the trace's
// distributedInfo, else from the file name ("rank3", "rank-3"); tensorboard_trace_handler's
// names (<host>_<pid>.<time>.pt.trace.json) give the host and pid. Where a rank has a profiler
// trace and an execution trace, the profiler trace is its table, with the execution trace's
// shapes (by record-function id) when it recorded none. bad_input naming the flag and the file
// when the path holds no trace or a file is not one.
std::vector<std::unique_ptr<TraceTable>> read_traces(const std::string& path);

}  // namespace opbench::trace
