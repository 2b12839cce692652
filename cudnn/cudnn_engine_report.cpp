#include "cudnn/cudnn_engine_report.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {

EngineReport refused_engine_report(std::string why) {
  EngineReport r;
  r.status = Status::skipped;
  r.note = std::move(why);
  return r;
}

EngineReport cudnn_engine_report(const std::string& graph_name,
                                 const std::function<CudnnGraph(cudnnHandle_t)>& build,
                                 const CudnnTarget& target, int enough_accepted) {
  EngineReport r;
  auto refuse = [&](std::string why) {
    r.status = Status::skipped;
    r.note = std::move(why);
    return r;
  };
  CudnnLogCapture log;
  CudnnGraph graph;  // alive until the plans made from it are done
  std::vector<Descriptor> configs;
  std::int64_t offered = 0;
  try {
    graph = build(target.handle);
    configs = heuristic_configs(*graph.graph, target, kSurveyConfigs, &offered);
  } catch (const Error& e) {
    const std::string logged = log.reason();
    return refuse(fmt::format("cuDNN refuses the {} graph: {}{}", graph_name, e.what(),
                              logged.empty() ? "" : " [" + logged + "]"));
  }
  r.offered = static_cast<int>(offered);
  if (configs.empty()) {
    const std::string logged = log.reason();
    return refuse(fmt::format("cuDNN's heuristics offer no engine configuration for the {} graph{}",
                              graph_name,
                              logged.empty() ? " (cuDNN logged no reason)" : ": " + logged));
  }
  std::vector<std::string> accepted, refusals;
  const auto verdicts = survey_configs(configs, target, enough_accepted);
  r.configurations = static_cast<int>(verdicts.size());
  for (const EngineVerdict& v : verdicts) {
    if (v.accepted)
      accepted.push_back(fmt::format("engine {} [{}]", v.engine, v.knobs));
    else if (refusals.size() < 3)
      refusals.push_back(fmt::format("engine {}: {}", v.engine, v.refusal));
  }
  r.accepted = static_cast<int>(accepted.size());
  r.engines = join(accepted, "; ");
  if (accepted.empty())
    return refuse(fmt::format("none of the {} configurations cuDNN offers accepts the {} graph: {}",
                              r.configurations, graph_name, join(refusals, " | ")));
  return r;
}

}  // namespace opbench
