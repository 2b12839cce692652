#pragma once
// What cuDNN makes of one graph without running it: the graph finalized, the heuristics'
// configurations, and each one's execution plan finalized — on the GPU that is here (a handle) or
// on a device description (a profile, no GPU needed). The report behind every family's dry run
// (bench_attention --dry-run, the memops norm survey), and the reason a real run's skipped rows
// give. The family says what graph to build and what to call it; the survey is the same for all.
#include <functional>
#include <string>

#include "common/record.hpp"
#include "cudnn/cudnn_backend.hpp"
#include "cudnn/cudnn_engines.hpp"

namespace opbench {

struct EngineReport {
  Status status = Status::ok;  // ok: at least one engine accepts the graph; else skipped
  int configurations = 0;      // the heuristics' configurations finalized
  int offered = 0;             // how many the heuristics had in all
  int accepted = 0;
  std::string engines;  // "engine 8 [k1=0 k3=1]; engine 9 [...]" for the accepted ones
  std::string note;     // cuDNN's reason when none accepts, or why the case was not asked
};

constexpr int kSurveyConfigs = 16;  // the heuristics' configurations considered per graph

// A report that asks cuDNN nothing: the family already knows why the case cannot run.
EngineReport refused_engine_report(std::string why);

// Builds the graph with `build` (given the target's handle, null for a device description),
// takes the heuristics' first kSurveyConfigs configurations and finalizes their plans in order
// until `enough_accepted` accept. `graph_name` names the graph in refusals ("fwd", "rmsnorm bwd").
// A graph or heuristics refusal, or none accepting, is a skipped report with cuDNN's reason.
EngineReport cudnn_engine_report(const std::string& graph_name,
                                 const std::function<CudnnGraph(cudnnHandle_t)>& build,
                                 const CudnnTarget& target, int enough_accepted);

}  // namespace opbench
