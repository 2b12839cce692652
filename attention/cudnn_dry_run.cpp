#include "attention/cudnn_dry_run.hpp"

#include <fmt/format.h>

#include "attention/cudnn_sdpa_graph.hpp"
#include "attention/cudnn_version_policy.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {

EngineReport cudnn_engine_report(const AttentionShape& s, AttentionPass pass,
                                 const CudnnTarget& target, int enough_accepted) {
  EngineReport r;
  auto refuse = [&](std::string why) {
    r.status = Status::skipped;
    r.note = std::move(why);
    return r;
  };
  if (auto why = cudnn_version_refusal(static_cast<long>(cudnnGetVersion()), pass))
    return refuse(*why);
  if (auto why = cudnn_sdpa_unsupported(s)) return refuse(*why);

  CudnnLogCapture log;
  SdpaGraph graph;
  std::vector<Descriptor> configs;
  std::int64_t offered = 0;
  try {
    graph = pass == AttentionPass::bwd ? build_sdpa_backward(target.handle, s)
                                       : build_sdpa_forward(target.handle, s);
    configs = heuristic_configs(*graph.graph, target, kSurveyConfigs, &offered);
  } catch (const Error& e) {
    const std::string logged = log.reason();
    return refuse(fmt::format("cuDNN refuses the {} graph: {}{}", attention_pass_name(pass),
                              e.what(), logged.empty() ? "" : " [" + logged + "]"));
  }
  r.offered = static_cast<int>(offered);
  if (configs.empty()) {
    const std::string logged = log.reason();
    return refuse(fmt::format(
        "cuDNN's heuristics offer no engine configuration for the {} "
        "graph{}",
        attention_pass_name(pass), logged.empty() ? " (cuDNN logged no reason)" : ": " + logged));
  }
  std::vector<std::string> accepted, refusals;
  const auto verdicts = survey_configs(configs, target, enough_accepted);
  r.configurations = static_cast<int>(verdicts.size());
  for (const EngineVerdict& v : verdicts) {
    if (v.accepted) {
      const std::string name = fmt::format("engine {} [{}]", v.engine, v.knobs);
      accepted.push_back(name);
    } else if (refusals.size() < 3) {
      refusals.push_back(fmt::format("engine {}: {}", v.engine, v.refusal));
    }
  }
  r.accepted = static_cast<int>(accepted.size());
  r.engines = join(accepted, "; ");
  if (accepted.empty())
    return refuse(fmt::format("none of the {} configurations cuDNN offers accepts the {} graph: {}",
                              r.configurations, attention_pass_name(pass), join(refusals, " | ")));
  return r;
}

}  // namespace opbench
