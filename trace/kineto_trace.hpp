#pragma once
// PyTorch profiler traces (Kineto's Chrome-trace JSON, torch.profiler's export_chrome_trace or
// tensorboard_trace_handler) into a per-shape table. docs/architecture.md#profiler-traces.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace_table.hpp"

namespace opbench::trace {

// Reads the events of one Kineto trace, handed over one at a time (json_stream), and builds
// its table at finish(). `world` is the number of ranks' traces read together (the
// communicator size when the trace does not say it).
class KinetoReader {
 public:
  KinetoReader(const std::string& path, int world);
  ~KinetoReader();
  KinetoReader(const KinetoReader&) = delete;
  KinetoReader& operator=(const KinetoReader&) = delete;

  void member(const std::string& key, const nlohmann::json& value);
  void event(nlohmann::json& e);
  std::unique_ptr<TraceTable> finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace opbench::trace
