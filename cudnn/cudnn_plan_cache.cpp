#include "cudnn/cudnn_plan_cache.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "common/error.hpp"

namespace opbench {

CudnnPlan& CudnnPlanCache::plan_for(const std::string& key, const std::string& graph_name,
                                    const CudnnTarget& target, const Build& build,
                                    const Trial& trial) {
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  auto chosen = std::make_unique<CudnnPlan>();
  CudnnLogCapture log;
  std::vector<Descriptor> configs;
  std::int64_t offered = 0;
  try {
    chosen->graph = build();
    configs = heuristic_configs(*chosen->graph.graph, target, max_configs_, &offered);
  } catch (const Error& e) {
    const std::string logged = log.reason();
    throw run_failure(fmt::format("cuDNN refuses the {} graph: {}{}", graph_name, e.what(),
                                  logged.empty() ? "" : " [" + logged + "]"));
  }
  chosen->offered = static_cast<int>(offered);

  std::string last_refusal = "the heuristics offered no engine configuration";
  if (configs.empty() && !log.reason().empty()) last_refusal += ": " + log.reason();
  PlanChoice choice(policy_);
  for (std::size_t i = 0; i < configs.size() && !choice.done(); ++i) {
    const BackendDescriptor& config = *configs[i];
    log.clear();  // a refusal's reason is what cuDNN logged for this configuration alone
    Descriptor plan;
    std::int64_t workspace = 0;
    std::optional<double> us;
    try {
      plan = make_plan(config, target);
      workspace = plan_workspace_bytes(*plan);
      us = trial(PlanCandidate{chosen->graph, *plan, workspace});
    } catch (const Error& e) {
      const std::string logged = log.reason();
      last_refusal = std::string(e.what()) + (logged.empty() ? "" : " [" + logged + "]");
    }
    if (choice.consider(static_cast<int>(i) + 1, us)) {
      chosen->plan = plan;
      chosen->workspace_bytes = workspace;
    }
  }
  if (!chosen->plan)
    throw run_failure(
        fmt::format("cuDNN has no plan for this {} graph ({} configurations "
                    "offered): {}",
                    graph_name, offered, last_refusal));
  chosen->position = choice.chosen();
  chosen->ran = choice.ran();
  const BackendDescriptor& config = *configs[static_cast<std::size_t>(choice.chosen() - 1)];
  chosen->engine = engine_index(config);
  chosen->knobs = engine_knobs(config);
  return *plans_.emplace(key, std::move(chosen)).first->second;
}

}  // namespace opbench
