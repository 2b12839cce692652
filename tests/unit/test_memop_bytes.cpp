// The bytes every memory-bound operator must move at least once, by hand (docs/formulas.md,
// "Memory-bound operators"), and the operators of a model's step.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "common/model_config.hpp"
#include "memops/elementwise.hpp"
#include "memops/memop.hpp"
#include "memops/memop_cases.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_operands.hpp"
#include "tests/unit/memop_case.hpp"
#include "tests/unit/step_models.hpp"

using namespace opbench;

namespace {

// rows = 4, cols = 8: n = 32 elements; fp32 unless given.
MemopCase make(MemOp op, MemPass pass = MemPass::fwd, DType t = DType::fp32) {
  return testing::memop_case(op, pass, t, 4, 8);
}

// Kernel F's pointers bound to c's operands (elementwise::bind_elementwise), as the positions of
// the operands in memop_operands(c): in[0..2] then out[0..1], -1 where unbound.
template <class F>
std::vector<int> bound(const MemopCase& c) {
  const std::vector<OperandSpec> operands = memop_operands(c);
  static float slots[8];
  struct Pointers {
    const float* in[3];
    float* out[2];
  };
  const Pointers p = elementwise::bind_elementwise<F, Pointers>([&](const char* name) -> void* {
    for (std::size_t i = 0; i < operands.size(); ++i)
      if (operands[i].name == name) return &slots[i];
    return nullptr;
  });
  std::vector<int> at;
  for (const float* q : {p.in[0], p.in[1], p.in[2], static_cast<const float*>(p.out[0]),
                         static_cast<const float*>(p.out[1])})
    at.push_back(q ? static_cast<int>(q - slots) : -1);
  return at;
}

void check_bytes(const MemopCase& c, std::int64_t read, std::int64_t write) {
  INFO(memop_name(c.op) << " " << mem_pass_name(c.pass));
  CHECK(memop_read_bytes(c) == read);
  CHECK(memop_write_bytes(c) == write);
}

}  // namespace

TEST_CASE("memops bytes by hand: elementwise and row operators, fp32, 4 rows of 8") {
  check_bytes(make(MemOp::add), 2 * 32 * 4, 32 * 4);  // x, y -> z
  // rmsnorm fwd reads x and w (8 x 4 B), writes y and rstd (4 rows x 4 B).
  check_bytes(make(MemOp::rmsnorm), 128 + 32, 128 + 16);
  // bwd reads dy, x, w, rstd; writes dx and dw.
  check_bytes(make(MemOp::rmsnorm, MemPass::bwd), 256 + 32 + 16, 128 + 32);
  // add_rmsnorm reads x, residual and w; writes y, the sum x + residual and rstd.
  check_bytes(make(MemOp::add_rmsnorm), 256 + 32, 256 + 16);
  check_bytes(make(MemOp::layernorm), 128 + 64, 128 + 32);                     // + bias; mean
  check_bytes(make(MemOp::layernorm, MemPass::bwd), 256 + 32 + 32, 128 + 64);  // dw, db
  check_bytes(make(MemOp::softmax), 128, 128);
  check_bytes(make(MemOp::softmax, MemPass::bwd), 256, 128);  // y, dy -> dx
  check_bytes(make(MemOp::swiglu), 256, 128);                 // g, u -> y
  check_bytes(make(MemOp::swiglu, MemPass::bwd), 384, 256);   // g, u, dy -> dg, du
  check_bytes(make(MemOp::gelu), 128, 128);
  check_bytes(make(MemOp::gelu, MemPass::bwd), 256, 128);
  // Cross-entropy reads the logits and 4 int64 targets, writes the gradient and 4 fp32 losses.
  check_bytes(make(MemOp::cross_entropy), 128 + 32, 128 + 16);
}

TEST_CASE("memops bytes by hand: the eager kernels, 4 rows of 8") {
  check_bytes(make(MemOp::mul), 256, 128);  // x, y -> z
  check_bytes(make(MemOp::mul, MemPass::fwd, DType::bf16), 128, 64);
  check_bytes(make(MemOp::scale), 128, 128);  // x -> y
  check_bytes(make(MemOp::sqrt), 128, 128);
  check_bytes(make(MemOp::silu), 128, 128);
  check_bytes(make(MemOp::silu, MemPass::bwd), 256, 128);  // x, dy -> dx
  check_bytes(make(MemOp::fill), 0, 128);                  // written only
  check_bytes(make(MemOp::scale_inplace), 128, 128);       // x read and written
  check_bytes(make(MemOp::axpy_inplace), 256, 128);        // y, x -> y
  check_bytes(make(MemOp::addcdiv_inplace), 384, 128);     // p, m, d -> p
  check_bytes(make(MemOp::addcdiv_inplace, MemPass::fwd, DType::bf16), 192, 64);
  // The pointers every provider binds, by the names the kernel gives its operands: p (updated,
  // read first), then m and d; z after x and y; swiglu's backward g, u, dy in, dg and du out.
  CHECK(bound<elementwise::AddcdivInPlace>(make(MemOp::addcdiv_inplace)) ==
        std::vector<int>{1, 2, -1, 0, -1});
  CHECK(bound<elementwise::Mul>(make(MemOp::mul)) == std::vector<int>{0, 1, -1, 2, -1});
  CHECK(bound<elementwise::Fill>(make(MemOp::fill)) == std::vector<int>{-1, -1, -1, 0, -1});
  CHECK(bound<elementwise::SwigluGrad>(make(MemOp::swiglu, MemPass::bwd)) ==
        std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("memops bytes by hand: rope, embedding, optimizer, casts and copies") {
  MemopCase rope = make(MemOp::rope);
  rope.heads = 2;
  rope.kv_heads = 1;
  rope.head_dim = 4;
  rope.cols = 12;  // (2 + 1) heads x 4
  // q and k: 48 elements of 4 B; cos and sin: 4 rows x 2 pairs x 2 tables x 4 B = 64.
  check_bytes(rope, 192 + 64, 192);
  MemopCase emb = make(MemOp::embedding);
  emb.vocab = 100;
  check_bytes(emb, 4 * 8 + 128, 128);  // ids (int64) and the rows looked up
  emb.pass = MemPass::bwd;
  check_bytes(emb, 4 * 8 + 128, 100 * 8 * 4);  // the whole table's gradient is written
  // AdamW, 32 parameters: reads p, g, m, v; writes p, m, v (fp32).
  check_bytes(make(MemOp::adamw), 32 * 16, 32 * 12);
  // bf16 variant: fp32 master, m, v and a bf16 gradient in; fp32 master, m, v and bf16 params out.
  check_bytes(make(MemOp::adamw_bf16), 32 * 14, 32 * 14);
  check_bytes(make(MemOp::cast_to_bf16), 128, 64);
  check_bytes(make(MemOp::cast_to_fp32, MemPass::fwd, DType::bf16), 64, 128);
  // bf16 in and the fp32 scale; e4m3 out and the fp32 amax.
  check_bytes(make(MemOp::fp8_quantize, MemPass::fwd, DType::bf16), 64 + 4, 32 + 4);
  MemopCase copy = make(MemOp::copy);
  check_bytes(copy, 128, 128);
  CHECK(copy.copied_bytes() == 128);
  MemopCase all = make(MemOp::peer_all);
  all.devices = 4;
  CHECK(all.copied_bytes() == 4 * 128);
  CHECK(make(MemOp::add).copied_bytes() == 0);
}

TEST_CASE("memops cases are validated with the entry named") {
  MemopCase bad = make(MemOp::adamw, MemPass::fwd, DType::bf16);
  CHECK_THROWS_WITH(
      validate(bad, "f.json: entry 3"),
      Catch::Contains("f.json: entry 3") && Catch::Contains("does not take dtype bf16"));
  CHECK_THROWS_WITH(validate(make(MemOp::add, MemPass::bwd), "x"), Catch::Contains("no backward"));
  CHECK_THROWS_WITH(parse_memop("rmsnrom", "--op"), Catch::Contains("did you mean 'rmsnorm'"));
}

TEST_CASE("the memory-bound operators of Llama-3.1 8B's step at tp 8") {
  ModelConfig m;
  m.name = "llama3.1-8b";
  m.seqlen = 8192;
  m.hidden_size = 4096;
  m.intermediate_size = 14336;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 128256;
  m.num_hidden_layers = 32;
  MemopModelRun run;
  run.tp = 8;
  const auto cases = model_memop_cases(m, run, {}, {MemPass::fwd, MemPass::bwd}, DType::bf16);
  auto find = [&](MemOp op, MemPass pass) -> const MemopCase& {
    for (const auto& c : cases)
      if (c.op == op && c.pass == pass) return c;
    FAIL("no case for " << memop_name(op));
    return cases.front();
  };
  // Sequence parallelism: 8192 / 8 = 1024 rows of 4096; two norms per layer and the final one.
  const MemopCase& norm = find(MemOp::rmsnorm, MemPass::bwd);
  CHECK((norm.rows == 1024 && norm.cols == 4096 && norm.calls_per_step == 65));
  CHECK(find(MemOp::add, MemPass::fwd).calls_per_step == 64);
  const MemopCase& act = find(MemOp::swiglu, MemPass::fwd);
  CHECK((act.rows == 8192 && act.cols == 14336 / 8 && act.calls_per_step == 32));
  const MemopCase& rope = find(MemOp::rope, MemPass::fwd);
  CHECK((rope.heads == 4 && rope.kv_heads == 1 && rope.head_dim == 128 && rope.cols == 640));
  const MemopCase& softmax = find(MemOp::softmax, MemPass::fwd);
  CHECK((softmax.rows == 4 * 8192 && softmax.cols == 8192));
  CHECK(find(MemOp::cross_entropy, MemPass::fwd).cols == 128256 / 8);
  CHECK(find(MemOp::embedding, MemPass::bwd).vocab == 16032);
  // bf16 training: fp32 master weights; the rank's shard of 8,030,261,248 parameters / 8 =
  // 1,003,782,656, in 4 calls of 250,945,664 (at most 2^28 each, as bench_step cuts them).
  const MemopCase& adam = find(MemOp::adamw_bf16, MemPass::fwd);
  CHECK((adam.rows == 1 && adam.cols == 250945664 && adam.dtype == DType::fp32));
  CHECK(adam.calls_per_step == 4);
  const MemopCase& fp8 = find(MemOp::fp8_quantize, MemPass::fwd);
  CHECK((fp8.rows == 1024 && fp8.dtype == DType::bf16 && fp8.calls_per_step == 64));
  // Operators without a backward never get one.
  for (const auto& c : cases)
    if (c.pass == MemPass::bwd) CHECK(has_backward(c.op));
  // An untied model has no add over a whole row of parameters; a tied one gets its table's
  // gradient sum, 16,032 x 4096 = 65,667,072 elements of the rank's vocabulary rows, once a
  // micro-batch; bench_step, which lists it on its own, asks for no parameter pass.
  auto parameter_adds = [](const std::vector<MemopCase>& of) {
    std::vector<MemopCase> adds;
    for (const auto& c : of)
      if (c.op == MemOp::add && c.rows == 1) adds.push_back(c);
    return adds;
  };
  CHECK(parameter_adds(cases).empty());
  m.tie_word_embeddings = true;
  const auto tied = parameter_adds(model_memop_cases(m, run, {}, {MemPass::fwd}, DType::bf16));
  REQUIRE(tied.size() == 1);
  CHECK((tied[0].cols == 65667072 && tied[0].calls_per_step == 1 && tied[0].dtype == DType::bf16));
  run.parameter_passes = false;
  CHECK(parameter_adds(model_memop_cases(m, run, {}, {MemPass::fwd}, DType::bf16)).empty());
  const auto activations_only = model_memop_cases(m, run, {}, {MemPass::fwd}, DType::bf16);
  REQUIRE_FALSE(activations_only.empty());  // the layers' operators stay
  for (const auto& c : activations_only)
    CHECK(c.op != MemOp::adamw_bf16);
  run.parameter_passes = true;
  m.tie_word_embeddings = false;

  run.tp = 3;
  CHECK_THROWS_WITH(model_memop_cases(m, run, {}, {MemPass::fwd}, DType::bf16),
                    Catch::Contains("--tp 3: does not divide the 8192 tokens of a sequence"));
  // Megatron splits each sequence, not the micro-batch's tokens: 2 sequences of 4098 tokens
  // (8196, which 4 divides) do not split over tp 4
  run.tp = 4;
  run.seqlens = {4098};
  run.micro_batches = {2};
  CHECK_THROWS_WITH(model_memop_cases(m, run, {}, {MemPass::fwd}, DType::bf16),
                    Catch::Contains("--tp 4: does not divide the 4098 tokens of a sequence"));
}

TEST_CASE(
    "the memory-bound operators of an MoE step: the router's softmax, the permute and "
    "unpermute, the routed and shared experts' activation") {
  // test::small_moe_model: 3 layers, the first dense; 4 experts of 32, top-2, 1 shared; hidden
  // 64. One micro-batch of its 32 tokens: 64 copies routed, every expert on the rank.
  const ModelConfig m = test::small_moe_model();
  MemopModelRun run;
  const auto cases = model_memop_cases(m, run, {}, {MemPass::fwd, MemPass::bwd}, DType::bf16);
  auto with_note = [&](const std::string& what, MemPass pass) {
    std::vector<MemopCase> found;
    for (const auto& c : cases)
      if (c.pass == pass && c.note.find(what) != std::string::npos) found.push_back(c);
    return found;
  };
  // The router's softmax over 4 experts for the 32 tokens, in fp32, once per MoE layer (2).
  const auto softmax = with_note("router softmax", MemPass::fwd);
  REQUIRE(softmax.size() == 1);
  CHECK((softmax[0].op == MemOp::softmax && softmax[0].rows == 32 && softmax[0].cols == 4));
  CHECK((softmax[0].dtype == DType::fp32 && softmax[0].calls_per_step == 2));
  // The permute: 64 rows of 64 gathered from the 32 tokens' (an embedding over 32 rows), the
  // same gather as the unpermute's backward: one case, 2 calls a layer.
  const auto permute = with_note("MoE permute: the copies gathered", MemPass::fwd);
  REQUIRE(permute.size() == 1);
  CHECK(permute[0].calls_per_step == 4);
  CHECK_THAT(permute[0].note, Catch::Contains("unpermute bwd: the tokens' gradients gathered"));
  CHECK((permute[0].op == MemOp::embedding && permute[0].rows == 64 && permute[0].vocab == 32));
  CHECK(memop_write_bytes(permute[0]) == 64 * 64 * 2);
  // The unpermute adds them into the 32 tokens' rows: an embedding's backward, 32 x 64 written.
  const auto unpermute = with_note("MoE unpermute: the copies weighted", MemPass::bwd);
  REQUIRE(unpermute.size() == 1);
  CHECK(memop_write_bytes(unpermute[0]) == 32 * 64 * 2);
  // The all-to-all dispatcher sorts the 64 copies by the rank's 4 experts and back, forward and
  // backward: one copy case of 64 x 64, 4 calls a layer (summed with the same-shaped copies).
  const auto sort = with_note("sort by local expert", MemPass::fwd);
  REQUIRE(sort.size() == 1);
  CHECK((sort[0].op == MemOp::copy && sort[0].rows == 64 && sort[0].cols == 64));
  CHECK(sort[0].calls_per_step == 4 * 2);
  // SwiGLU over the 64 routed rows at the expert's width and over the 32 tokens for the shared
  // one; the dense layer's over 32 x 128 once.
  const auto routed = with_note("routed experts: 64 tokens", MemPass::bwd);
  REQUIRE(routed.size() == 1);
  CHECK((routed[0].op == MemOp::swiglu && routed[0].rows == 64 && routed[0].cols == 32));
  const auto shared = with_note("shared experts", MemPass::fwd);
  REQUIRE(shared.size() == 1);
  CHECK((shared[0].rows == 32 && shared[0].cols == 32 && shared[0].calls_per_step == 2));
  const auto dense = with_note("the dense layers' MLP", MemPass::fwd);
  REQUIRE(dense.size() == 1);
  CHECK((dense[0].cols == 128 && dense[0].calls_per_step == 1));
  // bench_step lists the MoE layers' own under its routing; --op picks among them too.
  run.moe_layers = false;
  const auto dense_only = model_memop_cases(m, run, {}, {MemPass::fwd, MemPass::bwd}, DType::bf16);
  REQUIRE_FALSE(dense_only.empty());  // the norms, attention's and the dense layers' own stay
  for (const auto& c : dense_only)
    CHECK(c.note.find("MoE") == std::string::npos);
  run.moe_layers = true;
  // --op softmax: the attention scores' and the MoE router's, forward and backward.
  const auto softmaxes =
      model_memop_cases(m, run, {MemOp::softmax}, {MemPass::fwd, MemPass::bwd}, DType::bf16);
  REQUIRE(softmaxes.size() == 4);
  for (const auto& c : softmaxes)
    CHECK(c.op == MemOp::softmax);
  CHECK(softmaxes[2].note.find("MoE router") != std::string::npos);
  CHECK(softmaxes[3].note.find("MoE router") != std::string::npos);
  // At tp 2 the router and the permutes see the rank's 16 tokens (sequence parallel, as
  // Megatron-Core's MoE layers require): 32 copies gathered from 16 rows
  run.tp = 2;
  std::vector<std::pair<std::int64_t, std::int64_t>> seen;  // (rows, vocab): softmax, permute
  for (const auto& c : model_memop_cases(m, run, {}, {MemPass::fwd}, DType::bf16))
    if (c.note.find("MoE router softmax") != std::string::npos ||
        c.note.find("MoE permute: the copies gathered") != std::string::npos)
      seen.emplace_back(c.rows, c.vocab);
  CHECK(seen == std::vector<std::pair<std::int64_t, std::int64_t>>{{16, 0}, {32, 16}});
}

TEST_CASE("the operand catalogue: one list every provider binds, the bytes are its sums") {
  // AdamW's moments: v derived from m the same way on every provider, by hand
  CHECK(memop_inputs::adamw_second_moment(0.5f) == 0.265869140625f);    // (0.5 + 1/64)^2
  CHECK(memop_inputs::adamw_second_moment(-0.25f) == 0.070556640625f);  // (0.25 + 1/64)^2
  CHECK(memop_inputs::adamw_second_moment(0.0f) == 0.000244140625f);    // (1/64)^2
  const auto adam = memop_operands(make(MemOp::adamw));
  REQUIRE(adam.size() == 4);
  CHECK(adam[3].name == "v");
  CHECK(adam[3].fill == OperandFill::derived);
  CHECK(adam[3].role == OperandRole::state);
  // the seeds follow the order, so every provider fills the same operand with the same values
  CHECK(adam[1].seed - adam[0].seed == 7919);

  // embedding's table: one shared copy, touched only where the 4 ids look (4 x 8 of 1000 x 8)
  MemopCase e = make(MemOp::embedding);
  e.vocab = 1000;
  const auto emb = memop_operands(e);
  REQUIRE(emb.size() == 3);
  CHECK(emb[0].shared);
  CHECK(emb[0].bytes() == 1000 * 8 * 4);
  CHECK(emb[0].touched_bytes() == 32 * 4);
  CHECK(memop_read_bytes(e) == 32 * 4 + 4 * 8);  // the rows looked up, and the int64 ids

  // the read and written bytes are the operands' sums: rmsnorm bwd reads dy, x, w, rstd
  std::int64_t read = 0, written = 0;
  for (const auto& o : memop_operands(make(MemOp::rmsnorm, MemPass::bwd))) {
    if (o.read()) read += o.touched_bytes();
    if (o.written()) written += o.touched_bytes();
  }
  CHECK(read == 32 * 4 + 32 * 4 + 8 * 4 + 4 * 4);
  CHECK(written == 32 * 4 + 8 * 4);
  CHECK(memop_read_bytes(make(MemOp::rmsnorm, MemPass::bwd)) == read);

  // copies between memories have no operands: the providers move the bytes themselves
  CHECK(memop_operands(make(MemOp::h2d)).empty());
}

TEST_CASE("rope's and embedding's shape rules are stated once, with the field they concern") {
  MemopCase r = make(MemOp::rope);
  r.heads = 2;
  r.kv_heads = 1;
  r.head_dim = 4;
  r.cols = 12;
  CHECK_FALSE(memop_shape_problem(r));
  r.cols = 16;
  REQUIRE(memop_shape_problem(r));
  CHECK(memop_shape_problem(r)->field == "cols");
  CHECK(memop_shape_problem(r)->why ==
        "rope: cols must be (heads + kv_heads) x head_dim = 12, got 16");
  r.head_dim = 3;
  CHECK(memop_shape_problem(r)->field == "heads");
  MemopCase e = make(MemOp::embedding);
  CHECK(memop_shape_problem(e)->field == "vocab");
  CHECK_THROWS_WITH(validate(e, "entry 3"), "entry 3: embedding needs a vocab of at least 1");
}
