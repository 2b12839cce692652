#pragma once
// The plan each graph of a run executes, chosen once and kept under the caller's key: the graph is
// built, the heuristics' first configurations are made into plans and tried on the caller's
// buffers in cuDNN's order, and the policy (cudnn/plan_choice.hpp: first | fastest) keeps one.
// A refusal — of the graph, or of every configuration — carries cuDNN's reason, including what
// cuDNN writes only to its log. One cache per provider; every family that runs cuDNN graphs uses
// it (attention's SDPA: fastest; memops' norms: first).
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cudnn/cudnn_backend.hpp"
#include "cudnn/cudnn_engines.hpp"
#include "cudnn/plan_choice.hpp"

namespace opbench {

// A chosen plan: the graph it was made from stays alive beside it.
struct CudnnPlan {
  CudnnGraph graph;
  Descriptor plan;
  std::int64_t workspace_bytes = 0;
  std::int64_t engine = -1;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX of the chosen configuration
  std::string knobs;         // its knob choices ("KERNEL_CFG=26 STAGES=-1")
  int position = 0;          // its place in the heuristics' order, from 1
  int ran = 0;               // configurations tried whose plan finalized and ran
  int offered = 0;           // configurations the heuristics had in all
};

// One configuration under trial: its plan, the graph's builder (for the variant pack's uids) and
// the workspace the plan needs.
struct PlanCandidate {
  const CudnnGraph& graph;
  const BackendDescriptor& plan;
  std::int64_t workspace_bytes;
};

class CudnnPlanCache {
 public:
  // Runs a candidate on the caller's buffers and returns its trial time in microseconds (the
  // first policy ignores it); throws Error when the plan cannot run.
  using Trial = std::function<double(const PlanCandidate&)>;
  using Build = std::function<CudnnGraph()>;

  // `max_configs`: how many of the heuristics' configurations are tried at most.
  CudnnPlanCache(PlanPolicy policy, int max_configs) : policy_(policy), max_configs_(max_configs) {}

  PlanPolicy policy() const { return policy_; }

  // The plan kept under `key`, or one chosen now on `target` from the graph `build` makes.
  // `graph_name` names the graph in refusals ("fwd", "rmsnorm bwd"). Throws run_failure with
  // cuDNN's reason when the graph or every configuration tried is refused; nothing is kept then,
  // so a later call asks again.
  CudnnPlan& plan_for(const std::string& key, const std::string& graph_name,
                      const CudnnTarget& target, const Build& build, const Trial& trial);

  // Drops every plan (before the handle they were made on is destroyed).
  void clear() { plans_.clear(); }

 private:
  PlanPolicy policy_;
  int max_configs_;
  std::map<std::string, std::unique_ptr<CudnnPlan>> plans_;
};

}  // namespace opbench
