#include "step/megatron_flops.hpp"

namespace opbench {

std::optional<__int128> megatron_model_flops(const ModelConfig& m, std::int64_t sequences,
                                             std::int64_t seqlen, std::int64_t tp) {
  if (m.mla) return std::nullopt;
  using I = __int128;
  const I B = sequences, s = seqlen, h = m.hidden_size, n = m.num_attention_heads;
  const I g = m.num_key_value_heads, d = m.head_dim, q = n * d;
  const I V = (m.vocab_size + tp - 1) / tp * tp;
  const I dense_layers = m.dense_mlp_layers(), moe_layers = m.moe_layers();
  const I L = dense_layers + moe_layers;
  // 12·B·s·L·h²·(1 + g/n + s/(2h))·q/h = 12·B·s·L·(h·q + h·d·g) + 6·B·s·L·s·q, since
  // q·g/n = d·g: the score matrix halved, as a causal mask leaves half of it (Megatron-LM's
  // num_floating_point_operations: "causal mask (only half of the mask is non-zero)").
  const I attention = 12 * B * s * L * (h * q + h * d * g) + 6 * B * s * L * s * q;
  // 12·B·s·L·h²·(f/h)·k·γ = 12·γ·B·s·L·h·f·k; 12·γ is 18 for a gated MLP.
  const I mlp_factor = m.gated_mlp ? 18 : 12;
  I mlp = mlp_factor * B * s * h * dense_layers * m.intermediate_size;
  if (m.moe) {
    const I per_token = static_cast<I>(m.moe->moe_intermediate_size) * m.moe->num_experts_per_tok +
                        static_cast<I>(m.moe->moe_intermediate_size) * m.moe->n_shared_experts;
    mlp += mlp_factor * B * s * h * moe_layers * per_token;
  }
  // 12·B·s·L·h²·V/(2·L·h) = 6·B·s·h·V: the LM head's three passes.
  const I logits = 6 * B * s * h * V;
  return attention + mlp + logits;
}

}  // namespace opbench
