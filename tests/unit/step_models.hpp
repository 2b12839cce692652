#pragma once
// The models bench_step's unit tests project, written once.
#include <nlohmann/json.hpp>

#include <string>

#include "common/model_config.hpp"

namespace opbench::test {

// A model of a models.json in the repository ("/configs/models.json", "/bench/peers/...").
inline ModelConfig model_from(const std::string& path, const std::string& name) {
  return select_models(load_models(std::string(OPBENCH_SOURCE_DIR) + path), name, path).front();
}

inline ModelConfig configs_model(const std::string& name) {
  return model_from("/configs/models.json", name);
}

// 4 layers, hidden 64, 4 query heads and 2 KV heads of 16, MLP 128 (SwiGLU), vocabulary 256.
// Parameters: a layer q 64·64 + k 32·64 + v 32·64 + o 64·64 = 12,288, MLP 3·64·128 = 24,576,
// norms 2·64 = 128, so 36,992; 4 layers 147,968; embedding 256·64 = 16,384, final norm 64, LM
// head 16,384: P = 180,800.
inline ModelConfig small_model() {
  const auto doc = nlohmann::json::parse(R"([{"model": "small4", "seqlen": 32,
    "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "num_hidden_layers": 4,
    "tie_word_embeddings": false, "source": "test"}])");
  return models_from_json(doc, "small4.json").front();
}

// GPT-2's layout at test size: 2 layers, hidden 64, 4 heads of 16 (no GQA), MLP 256 (GELU),
// vocabulary 256, LayerNorm, every linear biased, a learned position table of 32 rows, the LM
// head tied to the embedding.
inline ModelConfig small_gpt_model() {
  const auto doc = nlohmann::json::parse(R"([{"model": "gpt4", "seqlen": 32,
    "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
    "num_key_value_heads": 4, "head_dim": 16, "vocab_size": 256, "num_hidden_layers": 2,
    "tie_word_embeddings": true, "gated_mlp": false, "attention_bias": true,
    "attention_out_bias": true, "mlp_bias": true, "norm": "layernorm",
    "learned_position_embeddings": true, "source": "test"}])");
  return models_from_json(doc, "gpt4.json").front();
}

// An MoE model at test size (DeepSeek's layout): 3 layers, the first dense (MLP 128, SwiGLU),
// the other two of 4 routed experts of width 32, top-2, and one shared expert of width 32;
// hidden 64, 4 query heads and 2 KV heads of 16, vocabulary 256.
inline ModelConfig small_moe_model() {
  const auto doc = nlohmann::json::parse(R"([{"model": "moe4", "seqlen": 32,
    "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "num_hidden_layers": 3,
    "tie_word_embeddings": false, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1,
    "source": "test"}])");
  return models_from_json(doc, "moe4.json").front();
}

}  // namespace opbench::test
