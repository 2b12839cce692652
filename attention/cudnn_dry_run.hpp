#pragma once
// What cuDNN makes of this project's SDPA graph for one case, without running it: the graph
// finalized, the heuristics' configurations, and each one's execution plan finalized — on the
// GPU that is here (a handle) or on a device description (a profile, no GPU needed). The report
// of bench_attention --dry-run, and the reason a real run's skipped rows give.
#include <string>

#include "attention/attention_shape.hpp"
#include "common/record.hpp"
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

// Finalizes the heuristics' configurations in order until `enough_accepted` accept the graph.
EngineReport cudnn_engine_report(const AttentionShape& s, AttentionPass pass,
                                 const CudnnTarget& target, int enough_accepted);

}  // namespace opbench
