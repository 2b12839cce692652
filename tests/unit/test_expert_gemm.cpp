// The routed experts of a rank as grouped GEMMs: shapes, real and padded FLOPs by hand, the
// per-expert check, and the CPU provider's three implementations with experts that have no tokens.
#include <catch2/catch.hpp>

#include <vector>

#include "common/error.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/gemm_cases.hpp"
#include "tests/unit/quick_measure.hpp"

using namespace opbench;

TEST_CASE("expert GEMM shapes per pass, real and padded FLOPs by hand") {
  // Three experts with 5, 0 and 3 tokens; the layer has N = 8 outputs, K = 4 inputs.
  ExpertGemm x{GemmPass::fprop, 8, 4, {5, 0, 3}, DType::fp32};
  CHECK(x.max_tokens() == 5);
  CHECK(x.total_tokens() == 8);
  GemmProblem e0 = x.expert(0);
  CHECK((e0.m == 5 && e0.n == 8 && e0.k == 4 && !e0.transa && e0.transb));
  // Real: 2·(5+0+3)·8·4 = 512. Padded: 3 experts x 2·5·8·4 = 960.
  CHECK(x.flops() == 512);
  CHECK(x.padded_flops() == 960);
  const GemmProblem padded = x.padded();
  CHECK((padded.batch == 3 && padded.m == 5 && padded.n == 8 && padded.k == 4));

  x.pass = GemmPass::dgrad;  // m = c_i, n = K, k = N
  CHECK((x.expert(2).m == 3 && x.expert(2).n == 4 && x.expert(2).k == 8));
  CHECK(x.flops() == 512);
  x.pass = GemmPass::wgrad;  // m = N, n = K, k = c_i
  CHECK((x.expert(2).m == 8 && x.expert(2).n == 4 && x.expert(2).k == 3 && x.expert(2).transa));
  CHECK(x.expert(1).k == 0);
  CHECK(x.flops() == 512);
  // Bytes, fp32: wgrad expert 0 reads dY (5x8) and X (5x4), writes dW (8x4):
  // (40 + 20)·4 = 240 read, 32·4 = 128 written; expert 1 reads nothing and writes 128.
  CHECK(x.expert(0).read_bytes() == 240);
  CHECK(x.read_bytes() == 240 + 0 + (24 + 12) * 4);
  CHECK(x.write_bytes() == 3 * 128);
  // fprop: an expert without tokens reads no weight (no GEMM runs for it): experts 0 and 2 read
  // X (c_i x 4) and W (8 x 4): (20 + 32 + 12 + 32)·4 = 384; they write Y (c_i x 8): 64·4 = 256.
  x.pass = GemmPass::fprop;
  CHECK(x.read_bytes() == 384);
  CHECK(x.write_bytes() == 256);
}

TEST_CASE("zero-token experts never reach a GEMM: fprop skips them, wgrad zeroes their gradient") {
  ExpertGemm x{GemmPass::fprop, 8, 4, {5, 0, 3}, DType::fp32};
  ExpertCalls fprop = expert_calls(x.problems(MoeImpl::grouped));
  CHECK(fprop.gemms == std::vector<std::size_t>{0, 2});
  CHECK(fprop.zeroed.empty());
  x.pass = GemmPass::wgrad;
  ExpertCalls wgrad = expert_calls(x.problems(MoeImpl::loop));
  CHECK(wgrad.gemms == std::vector<std::size_t>{0, 2});
  CHECK(wgrad.zeroed == std::vector<std::size_t>{1});
  // Padded: one batched problem at 5 tokens, computed whole.
  CHECK(expert_calls(x.problems(MoeImpl::padded)).gemms == std::vector<std::size_t>{0});
}

TEST_CASE("moe-impl: the implementations are listed once each") {
  CHECK(parse_moe_impls("padded,grouped") ==
        std::vector<MoeImpl>{MoeImpl::padded, MoeImpl::grouped});
  CHECK_THROWS_WITH(parse_moe_impls("grouped,fused"),
                    Catch::Contains("--moe-impl") && Catch::Contains("'fused'"));
  CHECK_THROWS_WITH(parse_moe_impls("loop,loop"), Catch::Contains("listed twice"));
}

TEST_CASE(
    "the CPU runs every implementation, zero-token experts included, and checks each expert") {
  auto provider = make_openblas_expert_provider();
  const GemmRunOptions o = testing::quick_checked<GemmRunOptions>();
  for (GemmPass pass : {GemmPass::fprop, GemmPass::dgrad, GemmPass::wgrad})
    for (MoeImpl impl : {MoeImpl::grouped, MoeImpl::loop, MoeImpl::padded}) {
      ExpertGemm x{pass, 48, 40, {70, 0, 33, 1, 0}, DType::fp32};
      const GemmResult r = provider->run(x, impl, o);
      INFO(pass_name(pass) << " " << moe_impl_name(impl) << ": " << r.note);
      CHECK(r.status == Status::ok);
      REQUIRE(r.check);
      INFO(r.check->detail);
      CHECK(r.check->passed);
      CHECK(r.measurement.samples_us.size() >= 3);
    }
}

TEST_CASE("a spoiled expert result fails the check and names the expert") {
  auto provider = make_openblas_expert_provider();
  GemmRunOptions o = testing::quick_checked<GemmRunOptions>();
  o.corrupt_for_test = true;
  ExpertGemm x{GemmPass::fprop, 32, 24, {10, 40, 0}, DType::fp64};
  for (MoeImpl impl : {MoeImpl::grouped, MoeImpl::loop, MoeImpl::padded}) {
    const GemmResult r = provider->run(x, impl, o);
    REQUIRE(r.check);
    INFO(moe_impl_name(impl) << ": " << r.check->detail);
    CHECK_FALSE(r.check->passed);
    if (impl != MoeImpl::padded)
      CHECK_THAT(r.check->detail, Catch::Contains("expert 1 (40 tokens)"));
  }
}

TEST_CASE("a wgrad expert without tokens must have written zeros") {
  ExpertGemm x{GemmPass::wgrad, 2, 2, {0}, DType::fp32};
  std::vector<float> c{0, 0, 0, 0};
  const CheckPrecision precision{0, 1e-7};
  CHECK(check_experts(x, {nullptr}, {nullptr}, {c.data()}, precision).passed);
  c[3] = 0.5f;
  const CheckResult bad = check_experts(x, {nullptr}, {nullptr}, {c.data()}, precision);
  CHECK_FALSE(bad.passed);
  CHECK_THAT(bad.detail, Catch::Contains("expert 0 (0 tokens)") && Catch::Contains("0.5"));
}

TEST_CASE("a MoE model's routed experts become expert rows per pass and implementation") {
  ModelConfig m;
  m.name = "tiny-moe";
  m.hidden_size = 64;
  m.intermediate_size = 128;
  m.num_attention_heads = 4;
  m.num_key_value_heads = 4;
  m.head_dim = 16;
  m.num_hidden_layers = 2;
  m.vocab_size = 256;
  m.seqlen = 100;
  m.gated_mlp = true;
  m.moe = MoeConfig{};
  m.moe->n_routed_experts = 8;
  m.moe->num_experts_per_tok = 2;
  m.moe->moe_intermediate_size = 32;
  MoeRun moe;
  moe.ep = 2;
  moe.routing = parse_routing("zipf:1.0");
  const auto cases =
      model_cases(m, 1, {1}, {}, {GemmPass::fprop, GemmPass::wgrad}, {DType::fp32}, moe);
  std::vector<const GemmCase*> experts;
  for (const auto& c : cases)
    if (c.experts) experts.push_back(&c);
  // gate_up and down, 2 passes, 3 implementations.
  REQUIRE(experts.size() == 12);
  const ExpertCase& first = *experts[0]->experts;
  // E = 8, top-2, N = 2, T = 100 under zipf:1.0: 147 74 49 37 | 29 25 21 18 (the routing test's
  // counts); rank 0 holds the first four.
  CHECK(first.rank == 0);
  CHECK(first.experts.tokens == std::vector<std::int64_t>{147, 74, 49, 37});
  CHECK(first.group_tokens.size() == 8);
  CHECK(experts[0]->gemm == "moe_expert_gate_up");
  CHECK((experts[0]->problem.batch == 4 && experts[0]->problem.m == 147 &&
         experts[0]->problem.n == 64 && experts[0]->problem.k == 64));
  // Real FLOPs 2·307·64·64; one grouped call per MoE layer.
  CHECK(experts[0]->flops() == 2 * 307 * 64 * 64);
  CHECK(experts[0]->calls_per_step == 2);

  moe.ep = 3;
  CHECK_THROWS_WITH(model_cases(m, 1, {1}, {}, {GemmPass::fprop}, {DType::fp32}, moe),
                    Catch::Contains("--ep 3: does not divide the 8 routed experts"));

  // Expert tensor parallelism. At tp 2 each expert's 32 columns split over the tp ranks by
  // default (2 x 16 gate_up columns), each rank routing the tp group's 100 tokens; --etp 1 keeps
  // every expert whole (2 x 32) and routes the rank's own 50: balanced, 2 ranks x 50 x top-2 / 8
  // = 25 tokens an expert instead of 50.
  moe.ep = 2;
  moe.routing = parse_routing("balanced");
  auto gate_up = [&](std::int64_t etp) {
    moe.etp = etp;
    for (const auto& c : model_cases(m, 2, {1}, {}, {GemmPass::fprop}, {DType::fp32}, moe))
      if (c.experts && c.gemm == "moe_expert_gate_up") return c;
    FAIL("no moe_expert_gate_up row");
    return GemmCase{};
  };
  const GemmCase by_tp = gate_up(0), whole = gate_up(1);
  CHECK(
      (by_tp.problem.n == 32 && by_tp.experts->experts.tokens == std::vector<std::int64_t>(4, 50)));
  CHECK(
      (whole.problem.n == 64 && whole.experts->experts.tokens == std::vector<std::int64_t>(4, 25)));
  CHECK(whole.note.find("ep 2, etp 1: rank 0") != std::string::npos);
  CHECK(by_tp.note.find("etp") == std::string::npos);
  CHECK_THROWS_WITH(gate_up(3), Catch::Contains("--etp 3: does not divide moe_intermediate_size"));
  // 101 tokens a micro-batch cannot be held 101 / 2 a rank
  m.seqlen = 101;
  CHECK_THROWS_WITH(gate_up(1), Catch::Contains("--etp 1 at --tp 2: a micro-batch's 101 tokens"));
}
