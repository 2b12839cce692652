#pragma once
// Which cuDNN versions run this project's SDPA graphs. Pure, so it is tested on any machine.
#include <optional>
#include <string>

#include "attention/attention_shape.hpp"
#include "cudnn/cudnn_version.hpp"

namespace opbench {

// The backward graph zeroes its fp32 dQ accumulator once, before the plan runs; cuDNN does that
// itself (and correctly) only from 9.6.0 on. The forward graph needs cuDNN 9.
constexpr long kCudnnMinForward = 90000;
constexpr long kCudnnMinBackward = 90600;

// Why cuDNN `version` (e.g. 91900 for 9.19.0) cannot run a pass of our graphs, or nullopt.
inline std::optional<std::string> cudnn_version_refusal(long version, AttentionPass pass) {
  const bool bwd = pass == AttentionPass::bwd;
  return cudnn_older_than(version, bwd ? kCudnnMinBackward : kCudnnMinForward,
                          "this " + attention_pass_name(pass) + " graph",
                          bwd ? "its dQ accumulator is zeroed correctly from 9.6.0 on" : "");
}

}  // namespace opbench
