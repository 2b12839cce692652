#pragma once
// Megatron-LM's model FLOPs of one training step: num_floating_point_operations() in
// megatron/training/training.py (Narayanan et al. 2021, "Efficient Large-Scale Language Model
// Training on GPU Clusters", appendix), the figure MFU is quoted against:
//   12·B·s·L·h² · [ (1 + g/n + s/h)·(q/h) + (f/h)·k·γ + (f_sh/h)·γ + V/(2·L·h) ]
// B sequences of s tokens, L layers, hidden h, n query heads in g KV groups, q = n·d the query
// projection, f the MLP width (an MoE layer: the expert width, k experts per token, f_sh the
// shared experts' width), γ = 3/2 for a gated MLP and 1 otherwise, V the vocabulary padded to a
// multiple of tp. 12 = 3 passes x 2 FLOPs per multiply-add x 2 GEMMs of each size; the attention
// term counts the whole s x s score matrix, causal or not.
// With DeepSeek's first_k_dense_replace, dense and MoE layers each take their own MLP term.
#include <cstdint>
#include <optional>

#include "common/model_config.hpp"

namespace opbench {

// Exact, multiplied out into integers (no fraction rounds); nullopt for multi-head latent
// attention, which the formula above does not describe.
std::optional<__int128> megatron_model_flops(const ModelConfig& model, std::int64_t sequences,
                                             std::int64_t seqlen, std::int64_t tp);

}  // namespace opbench
