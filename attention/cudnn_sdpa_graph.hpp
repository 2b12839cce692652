#pragma once
// The cuDNN operation graphs of scaled dot-product attention, forward and backward, in the
// composite form cuDNN's fused flash-attention engines recognise (the form cudnn-frontend
// lowers SDPA to on cuDNN 9 before the single fused SDPA operation learned causal masks):
//   forward:  S = Q·Kᵀ · scale, causal band mask, softmax with its statistics, O = P·V
//   backward: softmax_sum = rowsum(dO ∘ O); P = exp(S·scale − stats) under the mask;
//             dV = Pᵀ·dO; dS = P ∘ (dO·Vᵀ − softmax_sum) · scale; dK = dSᵀ·Q; dQ = dS·K
// Layout (B, S, H, D) for Q, K, V, O and their gradients; GQA by broadcasting K and V heads.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "attention/attention_shape.hpp"
#include "cudnn/cudnn_backend.hpp"

namespace opbench {

// The unique ids of the tensors a variant pack must name.
enum SdpaUid : std::int64_t {
  kUidQ = 1,
  kUidK = 2,
  kUidV = 3,
  kUidO = 4,
  kUidStats = 5,  // fp32 [B, Hq, Sq, 1]: log-sum-exp of each scaled score row
  kUidScale = 6,  // by value, fp32
  kUidNegInf = 7,
  kUidOne = 8,
  kUidSeqKv = 9,  // by value, int32 (bottom-right causal shift)
  kUidSeqQ = 10,
  kUidDO = 11,
  kUidDQ = 12,
  kUidDK = 13,
  kUidDV = 14,
  kUidSoftmaxSum = 15,  // fp32 [B, Hq, Sq, 1] scratch of the backward graph
  kUidDQAccum = 16,     // fp32 [B, Hq, Sq, Dqk] scratch of the backward graph
};

// The graph and the builder that owns its tensors and operations.
using SdpaGraph = CudnnGraph;

// Throws run_failure (with cuDNN's message) when cuDNN rejects the graph.
SdpaGraph build_sdpa_forward(cudnnHandle_t handle, const AttentionShape& s);
SdpaGraph build_sdpa_backward(cudnnHandle_t handle, const AttentionShape& s);

cudnnDataType_t cudnn_data_type(DType t);

// Why our SDPA graphs cannot express a case (its dtype; causal Sq > Skv, whose first rows would
// see no key, which cuDNN's bottom-right mask does not define), or nullopt.
std::optional<std::string> cudnn_sdpa_unsupported(const AttentionShape& s);

}  // namespace opbench
