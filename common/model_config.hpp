#pragma once
// configs/models.json: transformer model descriptions with Hugging Face-style keys.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opbench {

struct MoeConfig {
  std::int64_t n_routed_experts = 0;
  std::int64_t num_experts_per_tok = 0;  // top-k
  std::int64_t moe_intermediate_size = 0;
  std::int64_t n_shared_experts = 0;
  std::int64_t first_k_dense_replace = 0;  // the first k decoder layers keep a dense MLP
};

struct MlaConfig {                          // DeepSeek multi-head latent attention
  std::optional<std::int64_t> q_lora_rank;  // null: q is one projection
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct ModelConfig {
  std::string name;
  std::int64_t seqlen = 0;
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;  // defaults to hidden_size / num_attention_heads
  std::int64_t vocab_size = 0;
  std::int64_t num_hidden_layers = 0;
  bool tie_word_embeddings = false;
  bool gated_mlp = true;  // SwiGLU-style gate+up; false for GPT-style up only
  bool attention_bias = false;
  bool mlp_bias = false;
  bool attention_out_bias = false;           // the output projection has a bias (GPT style)
  bool learned_position_embeddings = false;  // a [seqlen, hidden] position table (GPT style)
  std::string norm = "rmsnorm";              // or "layernorm" (weight and bias)
  std::optional<MoeConfig> moe;
  std::optional<MlaConfig> mla;
  std::string source;  // where the numbers come from

  std::int64_t moe_layers() const {
    return moe ? num_hidden_layers - moe->first_k_dense_replace : 0;
  }
  std::int64_t dense_mlp_layers() const { return num_hidden_layers - moe_layers(); }
  // Layers whose MLP runs in the tensor-parallel group, gathering its input and scattering its
  // output under sequence parallelism: the dense ones, and the MoE ones with shared experts
  // (Megatron-Core's SharedExpertMLP communicates as a dense MLP does; the routed experts' tokens
  // go through the token dispatcher instead).
  std::int64_t tp_mlp_layers() const {
    return dense_mlp_layers() + (moe && moe->n_shared_experts > 0 ? moe_layers() : 0);
  }
};

// The attention heads one tensor-parallel rank holds: the query heads divided
// by tp, and the KV heads divided by tp, or, when tp is a multiple of them, one replicated KV
// head per rank (said in `note`). A tp that fits neither is a bad_input error naming --tp.
struct TpHeads {
  std::int64_t q = 0, kv = 0;
  std::int64_t kv_replicas = 1;  // ranks holding each KV head (tp / KV heads when they are fewer)
  std::string note;
};
TpHeads heads_per_tp_rank(const ModelConfig& m, std::int64_t tp);
// The sequence lengths one context-parallel rank of cp holds of `seqlens` (empty: the model's
// own): each / cp, refused (bad_input naming --cp) where the sequence does not cut into 2 · cp
// equal chunks, the load-balanced split Megatron-Core needs.
std::vector<std::int64_t> context_parallel_seqlens(const ModelConfig& m,
                                                   const std::vector<std::int64_t>& seqlens,
                                                   std::int64_t cp);
// Sequence parallelism splits each sequence (a context-parallel rank's share of it: `seqlen`)
// over the tp ranks, as Megatron's split along the sequence dimension does: refused (bad_input
// naming --tp) where tp does not divide it.
void require_sequence_split(std::int64_t seqlen, std::int64_t tp, std::int64_t cp = 1);
// K and V elements of one token on a tensor-parallel rank (its KV heads' key and value widths;
// MLA's decompressed keys and values): what context parallelism passes around its ring.
std::int64_t kv_elements_per_token(const ModelConfig& m, std::int64_t tp);

// Loads and validates every model of a models.json file.
std::vector<ModelConfig> load_models(const std::string& path);
// The same from a parsed document; `path` names it in errors.
std::vector<ModelConfig> models_from_json(const nlohmann::json& doc, const std::string& path);

// The models named in a comma-separated list ("all" or empty: every model), in list order.
// An unknown name is a bad_input error listing the known ones.
std::vector<ModelConfig> select_models(const std::vector<ModelConfig>& models,
                                       const std::string& names, const std::string& path);

}  // namespace opbench
