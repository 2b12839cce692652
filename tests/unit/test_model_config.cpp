#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "common/model_config.hpp"
#include "temp_files.hpp"

using namespace opbench;
using opbench::test::write_temp;

namespace {
const char* kLlama =
    R"({"model": "m", "seqlen": 4096, "hidden_size": 4096, "intermediate_size": 11008,
  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_hidden_layers": 32)";
std::string one_model(const std::string& extra) {
  return std::string("[") + kLlama + extra + "}]";
}
}  // namespace

TEST_CASE("the shipped models.json loads and has the models the issue names") {
  auto models = load_models(test::repo_config("models.json"));
  for (const char* name :
       {"tiny", "llama2-7b", "llama2-70b", "llama3.2-1b", "llama3.2-3b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b",
        "mixtral-8x7b", "mixtral-8x22b", "deepseek-v2-lite", "deepseek-v3", "qwen2.5-72b",
        "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt3-175b"})
    CHECK(select_models(models, name, "models.json").size() == 1);
  auto v3 = select_models(models, "deepseek-v3", "x").front();
  REQUIRE(v3.mla);
  REQUIRE(v3.moe);
  CHECK(*v3.mla->q_lora_rank == 1536);
  CHECK(v3.head_dim == 192);  // qk_nope 128 + qk_rope 64
  CHECK(v3.moe_layers() == 58);
  auto lite = select_models(models, "deepseek-v2-lite", "x").front();
  CHECK_FALSE(lite.mla->q_lora_rank.has_value());
}

TEST_CASE("defaults and derived values") {
  auto m = load_models(write_temp("ok.json", one_model(""))).front();
  CHECK(m.head_dim == 128);  // 4096 / 32
  CHECK(m.gated_mlp);
  CHECK(m.norm == "rmsnorm");
  CHECK_FALSE(m.moe.has_value());
}

TEST_CASE("model config errors name the file, the entry and the key") {
  auto bad = [](const std::string& name, const std::string& text) {
    auto path = write_temp(name, text);
    return [path] { load_models(path); };
  };
  CHECK_THROWS_WITH(bad("syntax.json", "[{\"model\": \"m\",, }]")(),
                    Catch::Contains("syntax.json:1:") && Catch::Contains("JSON syntax error"));
  CHECK_THROWS_WITH(bad("missing.json", R"([{"model": "m", "seqlen": 4096}])")(),
                    Catch::Contains("missing.json: entry 0 (\"m\"): key 'hidden_size': missing"));
  CHECK_THROWS_WITH(
      bad("negative.json", one_model(R"(, "head_dim": -128)"))(),
      Catch::Contains("key 'head_dim': -128 is out of range (allowed range 1..16777216)"));
  CHECK_THROWS_WITH(bad("fraction.json", one_model(R"(, "head_dim": 12.5)"))(),
                    Catch::Contains("key 'head_dim': expected an integer"));
  CHECK_THROWS_WITH(bad("type.json", one_model(R"(, "tie_word_embeddings": "yes")"))(),
                    Catch::Contains("key 'tie_word_embeddings': expected true or false"));
  CHECK_THROWS_WITH(bad("unknown.json", one_model(R"(, "hiden_size": 1)"))(),
                    Catch::Contains("unknown key 'hiden_size'"));
  CHECK_THROWS_WITH(
      bad("kv.json", R"([{"model": "m", "seqlen": 1, "hidden_size": 64, "intermediate_size": 1,
      "num_attention_heads": 6, "num_key_value_heads": 4, "vocab_size": 1, "num_hidden_layers": 1}])")(),
      Catch::Contains("key 'num_key_value_heads': 4 does not divide num_attention_heads (6)"));
  CHECK_THROWS_WITH(bad("moe.json", one_model(R"(, "n_routed_experts": 8)"))(),
                    Catch::Contains("key 'num_experts_per_tok': missing"));
  CHECK_THROWS_WITH(bad("top.json", "{}")(), Catch::Contains("expected a list of entries"));
  // Found by fuzzing: a number too large for any type is not a syntax error to nlohmann.
  CHECK_THROWS_WITH(bad("overflow.json", one_model(R"(, "head_dim": 1e999)"))(),
                    Catch::Contains("overflow.json: JSON error: number overflow parsing '1e999'"));
  CHECK_THROWS_WITH(bad("empty.json", "  \n")(), Catch::Contains("the file is empty"));
  CHECK_THROWS_WITH(bad("dup.json", std::string("[") + kLlama + "}," + kLlama + "}]")(),
                    Catch::Contains("entry 1 (\"m\"): key 'model': 'm' appears twice"));
  CHECK_THROWS_WITH(load_models("/nonexistent/models.json"),
                    Catch::Contains("/nonexistent/models.json: no such file"));
  CHECK_THROWS_WITH(load_models("/tmp"), Catch::Contains("/tmp: is a directory"));
}

TEST_CASE("unknown model names list the known ones") {
  auto models = load_models(write_temp("ok2.json", one_model("")));
  CHECK_THROWS_WITH(select_models(models, "m,nope", "f.json"),
                    Catch::Contains("--model: unknown model 'nope' in f.json (known: m)"));
  CHECK(select_models(models, "all", "f.json").size() == 1);
  CHECK(select_models(models, "M", "f.json").size() == 1);
}

TEST_CASE("heads of one tensor-parallel rank, as Megatron splits them") {
  auto m = models_from_json(nlohmann::json::parse(one_model("")), "m.json").front();  // 32 q, 8 kv
  auto h = heads_per_tp_rank(m, 4);
  CHECK(h.q == 8);
  CHECK(h.kv == 2);
  CHECK(h.note.empty());
  h = heads_per_tp_rank(m, 16);  // more ranks than KV heads: one replicated KV head each
  CHECK(h.q == 2);
  CHECK(h.kv == 1);
  CHECK(h.note == "8 KV heads replicated over tp 16");
  CHECK_THROWS_WITH(heads_per_tp_rank(m, 3),
                    Catch::Contains("--tp 3: does not divide num_attention_heads (32)"));
}
