#pragma once
// PyTorch profiler traces (Kineto's Chrome-trace JSON, torch.profiler's export_chrome_trace or
// tensorboard_trace_handler) into a per-shape table. docs/architecture.md#profiler-traces.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "common/error.hpp"
#include "trace/trace_table.hpp"

namespace opbench::trace {

// A profiler trace without shapes (record_shapes was off): bad input unless an execution trace of
// the same step gives them (trace_reader tries that).
class NoShapes : public Error {
 public:
  NoShapes(const std::string& message, std::string rank, long pid)
      : Error(ExitCode::bad_input, message), rank_(std::move(rank)), pid_(pid) {}
  const std::string& rank() const { return rank_; }  // distributedInfo's; "" when none
  long pid() const { return pid_; }                  // its operators' process; -1 when none

 private:
  std::string rank_;
  long pid_;
};

// Reads the events of one Kineto trace, handed over one at a time (json_stream), and builds
// its table at finish(). `world`: the communicator size where the trace does not say it (this
// trace's own distributedInfo world_size wins).
class KinetoReader {
 public:
  // `hints`: an execution trace of the same step, for a trace recorded without shapes (may be
  // null; must outlive the reader).
  KinetoReader(const std::string& path, const World& world,
               const std::unordered_map<std::int64_t, ShapeHint>* hints = nullptr);
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
