#pragma once
// PyTorch execution traces (torch.profiler.ExecutionTraceObserver; ExecutionGraphObserver in
// torch 1.13: the format MLCommons Chakra and PARAM's et_replay build on) into a per-shape
// table: every operator's input shapes and types, no times. docs/architecture.md#profiler-traces.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "trace/trace_table.hpp"

namespace opbench::trace {

class ExecutionTraceReader {
 public:
  // `world`: the communicators' size to take where the trace states none (no record_param_comms
  // stating it, no group_size argument).
  ExecutionTraceReader(const std::string& path, const World& world);
  ~ExecutionTraceReader();
  ExecutionTraceReader(const ExecutionTraceReader&) = delete;
  ExecutionTraceReader& operator=(const ExecutionTraceReader&) = delete;

  void member(const std::string& key, const nlohmann::json& value);
  void node(const nlohmann::json& n);
  std::unique_ptr<TraceTable> finish();
  // Each replayed call's case by its record-function id (valid after finish()).
  std::unordered_map<std::int64_t, ShapeHint> take_hints();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace opbench::trace
