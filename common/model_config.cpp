#include "common/model_config.hpp"

#include <fmt/format.h>

#include <set>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;  // 16M: far beyond any real model dim

MlaConfig read_mla(JsonEntry& e) {
  MlaConfig mla;
  mla.q_lora_rank = e.get_optional_int("q_lora_rank", 1, kMaxDim);
  mla.kv_lora_rank = e.get_int("kv_lora_rank", 1, kMaxDim);
  mla.qk_nope_head_dim = e.get_int("qk_nope_head_dim", 1, kMaxDim);
  mla.qk_rope_head_dim = e.get_int("qk_rope_head_dim", 1, kMaxDim);
  mla.v_head_dim = e.get_int("v_head_dim", 1, kMaxDim);
  return mla;
}

MoeConfig read_moe(JsonEntry& e, std::int64_t layers) {
  MoeConfig moe;
  moe.n_routed_experts = e.get_int("n_routed_experts", 1, 1 << 16);
  moe.num_experts_per_tok = e.get_int("num_experts_per_tok", 1, moe.n_routed_experts);
  moe.moe_intermediate_size = e.get_int("moe_intermediate_size", 1, kMaxDim);
  moe.n_shared_experts = e.get_optional_int("n_shared_experts", 0, 1 << 16).value_or(0);
  moe.first_k_dense_replace = e.get_optional_int("first_k_dense_replace", 0, layers).value_or(0);
  return moe;
}

ModelConfig read_model(JsonEntry& e) {
  ModelConfig m;
  m.name = e.get_string("model");
  m.seqlen = e.get_int("seqlen", 1, kMaxDim);
  m.hidden_size = e.get_int("hidden_size", 1, kMaxDim);
  m.intermediate_size = e.get_int("intermediate_size", 1, kMaxDim);
  m.num_attention_heads = e.get_int("num_attention_heads", 1, 1 << 16);
  m.num_key_value_heads = e.get_int("num_key_value_heads", 1, m.num_attention_heads);
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    e.fail("num_key_value_heads", fmt::format("{} does not divide num_attention_heads ({})",
                                              m.num_key_value_heads, m.num_attention_heads));
  m.vocab_size = e.get_int("vocab_size", 1, std::int64_t{1} << 30);
  m.num_hidden_layers = e.get_int("num_hidden_layers", 1, 100000);
  m.tie_word_embeddings = e.get_optional_bool("tie_word_embeddings").value_or(false);
  m.gated_mlp = e.get_optional_bool("gated_mlp").value_or(true);
  m.attention_bias = e.get_optional_bool("attention_bias").value_or(false);
  m.mlp_bias = e.get_optional_bool("mlp_bias").value_or(false);
  m.attention_out_bias = e.get_optional_bool("attention_out_bias").value_or(false);
  m.learned_position_embeddings =
      e.get_optional_bool("learned_position_embeddings").value_or(false);
  m.norm = e.get_optional_string("norm").value_or("rmsnorm");
  if (m.norm != "rmsnorm" && m.norm != "layernorm")
    e.fail("norm", fmt::format("'{}' is not one of rmsnorm, layernorm", m.norm));
  m.source = e.get_optional_string("source").value_or("");

  if (e.has("kv_lora_rank") || e.has("qk_nope_head_dim") || e.has("qk_rope_head_dim") ||
      e.has("v_head_dim"))
    m.mla = read_mla(e);
  else
    e.get_optional_int("q_lora_rank", 1, kMaxDim);  // allowed (null) on non-MLA models

  if (auto hd = e.get_optional_int("head_dim", 1, kMaxDim)) {
    m.head_dim = *hd;
  } else if (m.mla) {
    m.head_dim = m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim;
  } else {
    if (m.hidden_size % m.num_attention_heads != 0)
      e.fail("head_dim", fmt::format("missing, and hidden_size ({}) is not a multiple of "
                                     "num_attention_heads ({})",
                                     m.hidden_size, m.num_attention_heads));
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }

  if (e.has("n_routed_experts") || e.has("num_experts_per_tok") || e.has("moe_intermediate_size"))
    m.moe = read_moe(e, m.num_hidden_layers);
  else if (e.has("n_shared_experts") || e.has("first_k_dense_replace"))
    e.fail("n_routed_experts", "missing (required on MoE models)");
  e.reject_unknown_keys();
  return m;
}

}  // namespace

std::vector<ModelConfig> load_models(const std::string& path) {
  return models_from_json(load_json_file(path), path);
}

std::vector<ModelConfig> models_from_json(const nlohmann::json& doc, const std::string& path) {
  std::vector<ModelConfig> models;
  std::set<std::string> names;
  for_each_entry(doc, path, "model", [&](JsonEntry& e) {
    models.push_back(read_model(e));
    if (!names.insert(models.back().name).second)
      e.fail("model", fmt::format("'{}' appears twice in the file", models.back().name));
  });
  return models;
}

std::vector<ModelConfig> select_models(const std::vector<ModelConfig>& models,
                                       const std::string& names, const std::string& path) {
  auto wanted = split(names, ',');
  if (wanted.empty() || (wanted.size() == 1 && to_lower(wanted[0]) == "all")) return models;
  std::vector<ModelConfig> out;
  std::vector<std::string> seen;  // lower-cased: "tiny,TINY" is one model twice
  for (const auto& name : wanted) {
    push_once(seen, to_lower(name), "--model", name);
    auto it = std::find_if(models.begin(), models.end(), [&](const ModelConfig& m) {
      return to_lower(m.name) == to_lower(name);
    });
    if (it == models.end()) {
      std::vector<std::string> known;
      for (const auto& m : models)
        known.push_back(m.name);
      throw bad_input(fmt::format("--model: unknown model '{}' in {} (known: {})", name, path,
                                  join(known, ", ")));
    }
    out.push_back(*it);
  }
  return out;
}

std::vector<std::int64_t> context_parallel_seqlens(const ModelConfig& m,
                                                   const std::vector<std::int64_t>& seqlens,
                                                   std::int64_t cp) {
  std::vector<std::int64_t> out = seqlens.empty() ? std::vector<std::int64_t>{m.seqlen} : seqlens;
  for (std::int64_t& s : out) {
    if (cp > 1 && s % (2 * cp) != 0)
      throw bad_input(fmt::format(
          "--cp {}: does not split the sequence of {} tokens (model '{}') into 2 x {} equal "
          "chunks (Megatron-Core balances the causal mask's work over them)",
          cp, s, m.name, cp));
    s /= cp;
  }
  return out;
}

void require_sequence_split(std::int64_t seqlen, std::int64_t tp, std::int64_t cp) {
  if (seqlen % tp != 0)
    throw bad_input(fmt::format(
        "--tp {}: does not divide the {} tokens of a sequence{} (sequence parallelism splits "
        "each sequence over the tp ranks)",
        tp, seqlen, cp > 1 ? fmt::format(" on a --cp {} rank", cp) : ""));
}

std::int64_t kv_elements_per_token(const ModelConfig& m, std::int64_t tp) {
  const TpHeads h = heads_per_tp_rank(m, tp);
  if (m.mla) return h.kv * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim);
  return 2 * h.kv * m.head_dim;
}

TpHeads heads_per_tp_rank(const ModelConfig& m, std::int64_t tp) {
  TpHeads h;
  if (m.num_attention_heads % tp != 0)
    throw bad_input(fmt::format("--tp {}: does not divide num_attention_heads ({}) of model '{}'",
                                tp, m.num_attention_heads, m.name));
  h.q = m.num_attention_heads / tp;
  h.kv = m.num_key_value_heads;
  if (h.kv % tp == 0) {
    h.kv /= tp;
  } else if (tp % h.kv == 0) {
    h.kv = 1;
    h.kv_replicas = tp / m.num_key_value_heads;
    h.note = fmt::format("{} KV heads replicated over tp {}", m.num_key_value_heads, tp);
  } else {
    throw bad_input(fmt::format(
        "--tp {}: neither divides nor is a multiple of num_key_value_heads ({}) of model '{}'", tp,
        m.num_key_value_heads, m.name));
  }
  return h;
}

}  // namespace opbench
