#pragma once
// What cuDNN makes of this project's SDPA graph for one case, without running it: the shared
// engine report (cudnn/cudnn_engine_report) of the case's forward or backward graph, after the
// checks only attention knows (the cuDNN version each pass needs, what the graphs express). The
// report of bench_attention --dry-run, and the reason a real run's skipped rows give.
#include "attention/attention_shape.hpp"
#include "cudnn/cudnn_engine_report.hpp"

namespace opbench {

// Finalizes the heuristics' configurations in order until `enough_accepted` accept the graph.
EngineReport cudnn_engine_report(const AttentionShape& s, AttentionPass pass,
                                 const CudnnTarget& target, int enough_accepted);

}  // namespace opbench
