#include "common/param_layout.hpp"

namespace opbench {
namespace {

// A Linear layer: weight [out, in] and, with a bias, bias [out].
void linear(std::vector<ParamTensor>& out, const std::string& name, std::int64_t out_features,
            std::int64_t in_features, bool bias) {
  out.push_back({name + ".weight", {out_features, in_features}});
  if (bias) out.push_back({name + ".bias", {out_features}});
}

// RMSNorm has a weight; LayerNorm a weight and a bias.
void norm(std::vector<ParamTensor>& out, const ModelConfig& m, const std::string& name,
          std::int64_t width) {
  out.push_back({name + ".weight", {width}});
  if (m.norm == "layernorm") out.push_back({name + ".bias", {width}});
}

ModuleParams attention(const ModelConfig& m) {
  ModuleParams mod{"attention", {}};
  auto& p = mod.params;
  const std::int64_t H = m.hidden_size, heads = m.num_attention_heads;
  if (m.mla) {
    const auto& a = *m.mla;
    const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank) {
      linear(p, "q_a_proj", *a.q_lora_rank, H, m.attention_bias);
      norm(p, m, "q_a_layernorm", *a.q_lora_rank);
      linear(p, "q_b_proj", heads * qk_head, *a.q_lora_rank, false);
    } else {
      linear(p, "q_proj", heads * qk_head, H, false);
    }
    linear(p, "kv_a_proj_with_mqa", a.kv_lora_rank + a.qk_rope_head_dim, H, m.attention_bias);
    norm(p, m, "kv_a_layernorm", a.kv_lora_rank);
    linear(p, "kv_b_proj", heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, false);
    linear(p, "o_proj", H, heads * a.v_head_dim, m.attention_out_bias);
    return mod;
  }
  const std::int64_t hd = m.head_dim, kv = m.num_key_value_heads;
  linear(p, "q_proj", heads * hd, H, m.attention_bias);
  linear(p, "k_proj", kv * hd, H, m.attention_bias);
  linear(p, "v_proj", kv * hd, H, m.attention_bias);
  linear(p, "o_proj", H, heads * hd, m.attention_out_bias);
  return mod;
}

// A feed-forward block of width `inter`: gate, up and down (up and down when not gated).
void mlp(std::vector<ParamTensor>& p, const ModelConfig& m, const std::string& prefix,
         std::int64_t inter) {
  if (m.gated_mlp) linear(p, prefix + "gate_proj", inter, m.hidden_size, m.mlp_bias);
  linear(p, prefix + "up_proj", inter, m.hidden_size, m.mlp_bias);
  linear(p, prefix + "down_proj", m.hidden_size, inter, m.mlp_bias);
}

}  // namespace

std::int64_t ParamTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

std::int64_t total_numel(const std::vector<ParamTensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params)
    n += p.numel();
  return n;
}

std::vector<ModuleParams> decoder_layer_modules(const ModelConfig& m, bool moe_layer) {
  std::vector<ModuleParams> out;
  out.push_back(attention(m));
  if (moe_layer && m.moe) {
    const auto& e = *m.moe;
    ModuleParams moe{"moe", {}};
    linear(moe.params, "gate", e.n_routed_experts, m.hidden_size, false);  // the router
    for (std::int64_t i = 0; i < e.n_routed_experts; ++i)
      mlp(moe.params, m, "experts." + std::to_string(i) + ".", e.moe_intermediate_size);
    if (e.n_shared_experts > 0)
      mlp(moe.params, m, "shared_experts.", e.n_shared_experts * e.moe_intermediate_size);
    out.push_back(std::move(moe));
  } else {
    ModuleParams dense{"mlp", {}};
    mlp(dense.params, m, "", m.intermediate_size);
    out.push_back(std::move(dense));
  }
  ModuleParams norms{"norms", {}};
  norm(norms.params, m, "input_layernorm", m.hidden_size);
  norm(norms.params, m, "post_attention_layernorm", m.hidden_size);
  out.push_back(std::move(norms));
  return out;
}

std::vector<ModuleParams> root_modules(const ModelConfig& m) {
  std::vector<ModuleParams> out;
  ModuleParams embedding{"embedding", {{"embed_tokens.weight", {m.vocab_size, m.hidden_size}}}};
  if (m.learned_position_embeddings)
    embedding.params.push_back({"embed_positions.weight", {m.seqlen, m.hidden_size}});
  out.push_back(std::move(embedding));
  ModuleParams final_norm{"final_norm", {}};
  norm(final_norm.params, m, "norm", m.hidden_size);
  out.push_back(std::move(final_norm));
  // Tied embeddings share one tensor: the LM head adds nothing to count or to gather.
  if (!m.tie_word_embeddings)
    out.push_back({"lm_head", {{"lm_head.weight", {m.vocab_size, m.hidden_size}}}});
  return out;
}

}  // namespace opbench
