#include <catch2/catch.hpp>

#include <map>

#include "common/error.hpp"
#include "common/model_config.hpp"
#include "gemm/gemm_problem.hpp"
#include "gemm/model_gemms.hpp"
#include "temp_files.hpp"

using namespace opbench;

namespace {

ModelConfig model(const std::string& name) {
  static auto models = load_models(test::repo_config("models.json"));
  return select_models(models, name, "models.json").front();
}

std::map<std::string, LinearLayer> layers_by_name(const ModelConfig& m, std::int64_t tp,
                                                  std::int64_t mb = 1) {
  std::map<std::string, LinearLayer> out;
  for (const auto& l : model_linear_layers(m, ParallelConfig{tp, mb, 0}))
    out[l.name] = l;
  return out;
}

void check_layer(const LinearLayer& l, std::int64_t M, std::int64_t N, std::int64_t K,
                 std::int64_t calls) {
  INFO(l.name);
  CHECK(l.M == M);
  CHECK(l.N == N);
  CHECK(l.K == K);
  CHECK(l.calls_per_step == calls);
}

}  // namespace

TEST_CASE("Llama-3.1 70B at tp 8: every linear layer's dims by hand") {
  // hidden 8192, 64 heads, 8 KV heads, head_dim 128, intermediate 28672, vocab 128256, seq 8192.
  auto l = layers_by_name(model("llama3.1-70b"), 8);
  REQUIRE(l.size() == 5);
  check_layer(l["attn_qkv"], 8192, (64 / 8 + 2 * 8 / 8) * 128, 8192, 80);  // N = 1280
  check_layer(l["attn_out"], 8192, 8192, 64 * 128 / 8, 80);                // K = 1024
  check_layer(l["mlp_gate_up"], 8192, 2 * 28672 / 8, 8192, 80);            // N = 7168
  check_layer(l["mlp_down"], 8192, 8192, 28672 / 8, 80);                   // K = 3584
  check_layer(l["lm_head"], 8192, 128256 / 8, 8192, 1);                    // N = 16032
}

TEST_CASE("Llama-3.1 70B at tp 8: the three passes of attn_qkv and mlp_down") {
  auto l = layers_by_name(model("llama3.1-70b"), 8);
  auto fprop = pass_problem(l["attn_qkv"], GemmPass::fprop, DType::bf16);
  CHECK(fprop.m == 8192);
  CHECK(fprop.n == 1280);
  CHECK(fprop.k == 8192);
  CHECK(fprop.layout() == "NT");
  auto dgrad = pass_problem(l["attn_qkv"], GemmPass::dgrad, DType::bf16);  // dX = dY·W
  CHECK(dgrad.m == 8192);
  CHECK(dgrad.n == 8192);
  CHECK(dgrad.k == 1280);
  CHECK(dgrad.layout() == "NN");
  auto wgrad = pass_problem(l["attn_qkv"], GemmPass::wgrad, DType::bf16);  // dW = dYᵀ·X
  CHECK(wgrad.m == 1280);
  CHECK(wgrad.n == 8192);
  CHECK(wgrad.k == 8192);
  CHECK(wgrad.layout() == "TN");

  auto down_d = pass_problem(l["mlp_down"], GemmPass::dgrad, DType::bf16);
  CHECK(down_d.dims() == "8192x3584x8192");
  auto down_w = pass_problem(l["mlp_down"], GemmPass::wgrad, DType::bf16);
  CHECK(down_w.dims() == "8192x3584x8192");
  CHECK(down_w.layout() == "TN");
  // All three passes do the same work: 2·8192·1280·8192 FLOPs.
  CHECK(fprop.flops() == 171798691840);
  CHECK(dgrad.flops() == fprop.flops());
  CHECK(wgrad.flops() == fprop.flops());
}

TEST_CASE("micro-batch and sequence length set M") {
  auto l = model_linear_layers(model("llama3.1-8b"), ParallelConfig{1, 2, 1024});
  CHECK(l.front().M == 2048);
}

TEST_CASE("GQA with fewer KV heads than tp ranks replicates them") {
  auto l = layers_by_name(model("llama3.1-70b"), 16);
  CHECK(l["attn_qkv"].N == (64 / 16 + 2 * 1) * 128);  // 768: one KV head per rank
  CHECK_THAT(l["attn_qkv"].note, Catch::Contains("replicated"));
  CHECK_THROWS_WITH(model_linear_layers(model("llama3.1-70b"), ParallelConfig{3, 1, 0}),
                    Catch::Contains("--tp 3: does not divide num_attention_heads (64)"));
}

TEST_CASE("Mixtral 8x7B: router and balanced experts") {
  auto l = layers_by_name(model("mixtral-8x7b"), 1);
  CHECK(l.count("mlp_gate_up") == 0);  // every layer is MoE
  check_layer(l["moe_router"], 4096, 8, 4096, 32);
  check_layer(l["moe_expert_gate_up"], 4096 * 2 / 8, 2 * 14336, 4096, 32 * 8);
  check_layer(l["moe_expert_down"], 1024, 4096, 14336, 256);
  // at tp 2 the router sees the rank's 2048 of the 4096 tokens (sequence parallel), each expert
  // half its columns
  auto l2 = layers_by_name(model("mixtral-8x7b"), 2);
  check_layer(l2["moe_router"], 2048, 8, 4096, 32);
  check_layer(l2["moe_expert_gate_up"], 4096 * 2 / 8, 14336, 4096, 32 * 8);
}

TEST_CASE("DeepSeek-V3: MLA projections, dense first layers, routed and shared experts") {
  auto l = layers_by_name(model("deepseek-v3"), 1);
  check_layer(l["attn_q_down"], 4096, 1536, 7168, 61);
  check_layer(l["attn_q_up"], 4096, 128 * (128 + 64), 1536, 61);
  check_layer(l["attn_kv_down"], 4096, 512 + 64, 7168, 61);
  check_layer(l["attn_kv_up"], 4096, 128 * (128 + 128), 512, 61);
  check_layer(l["attn_out"], 4096, 7168, 128 * 128, 61);
  check_layer(l["mlp_gate_up"], 4096, 2 * 18432, 7168, 3);
  check_layer(l["moe_expert_gate_up"], 4096 * 8 / 256, 2 * 2048, 7168, 58 * 256);
  check_layer(l["moe_shared_gate_up"], 4096, 2 * 2048, 7168, 58);
  check_layer(l["lm_head"], 4096, 129280, 7168, 1);
}

TEST_CASE("DeepSeek-V2-Lite has one q projection") {
  auto l = layers_by_name(model("deepseek-v2-lite"), 1);
  CHECK(l.count("attn_q_down") == 0);
  check_layer(l["attn_q"], 4096, 16 * 192, 2048, 27);
  check_layer(l["moe_expert_gate_up"], 4096 * 6 / 64, 2 * 1408, 2048, 26 * 64);
}

TEST_CASE("GPT-3 has an ungated MLP and a padded LM head at tp 8") {
  auto l = layers_by_name(model("gpt3-175b"), 8);
  check_layer(l["mlp_up"], 2048, 49152 / 8, 12288, 96);
  CHECK(l["lm_head"].N == 6283);  // ceil(50257 / 8)
  CHECK_THAT(l["lm_head"].note, Catch::Contains("padded to 50264"));
}

TEST_CASE("GEMM FLOPs and bytes") {
  GemmProblem p{4096, 2048, 1024, 3, false, true, DType::bf16, DType::bf16, false};
  CHECK(p.flops() == 2LL * 3 * 4096 * 2048 * 1024);
  CHECK(p.read_bytes() == 3LL * (4096 * 1024 + 1024 * 2048) * 2);
  CHECK(p.write_bytes() == 3LL * 4096 * 2048 * 2);
  p.beta_nonzero = true;
  CHECK(p.read_bytes() == 3LL * (4096 * 1024 + 1024 * 2048) * 2 + 3LL * 4096 * 2048 * 2);
  GemmProblem fp8{
      128, 256, 512, 1, false, true, DType::fp8_e4m3, gemm_output_dtype(DType::fp8_e4m3), false};
  CHECK(fp8.out_dtype == DType::bf16);
  CHECK(fp8.read_bytes() == 128 * 512 + 512 * 256);
  CHECK(fp8.write_bytes() == 128 * 256 * 2);
  CHECK(parse_passes("wgrad,fprop") == std::vector<GemmPass>{GemmPass::wgrad, GemmPass::fprop});
  CHECK_THROWS_WITH(parse_passes("bprop"), Catch::Contains("unknown pass 'bprop'"));
}

TEST_CASE("MoE experts without a gated MLP have an up projection, not gate+up (#30 item 9)") {
  // DeepSeek-V2-Lite with gated_mlp false: the routed and shared experts' first GEMM is up only,
  // moe_intermediate_size 1408 wide (not 2 x 1408), as the dense MLP of GPT-3 is.
  ModelConfig m = model("deepseek-v2-lite");
  m.gated_mlp = false;
  auto l = layers_by_name(m, 1);
  CHECK(l.count("moe_expert_gate_up") == 0);
  CHECK(l.count("moe_shared_gate_up") == 0);
  check_layer(l["moe_expert_up"], 4096 * 6 / 64, 1408, 2048, 26 * 64);
  check_layer(l["moe_shared_up"], 4096, 2 * 1408, 2048, 26);  // 2 shared experts x 1408
  check_layer(l["moe_expert_down"], 4096 * 6 / 64, 2048, 1408, 26 * 64);
}
