#include "attention/cudnn_dry_run.hpp"

#include "attention/cudnn_sdpa_graph.hpp"
#include "attention/cudnn_version_policy.hpp"

namespace opbench {

EngineReport cudnn_engine_report(const AttentionShape& s, AttentionPass pass,
                                 const CudnnTarget& target, int enough_accepted) {
  if (auto why = cudnn_version_refusal(static_cast<long>(cudnnGetVersion()), pass))
    return refused_engine_report(*why);
  if (auto why = cudnn_sdpa_unsupported(s)) return refused_engine_report(*why);
  return cudnn_engine_report(
      attention_pass_name(pass),
      [&](cudnnHandle_t handle) {
        return pass == AttentionPass::bwd ? build_sdpa_backward(handle, s)
                                          : build_sdpa_forward(handle, s);
      },
      target, enough_accepted);
}

}  // namespace opbench
