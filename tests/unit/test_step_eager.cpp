// bench_step's eager kernel plan, the eager optimizers and the calibration from a capture, with
// values worked by hand.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include <cblas.h>

#include "common/cpu_parallel.hpp"
#include "memops/memop_operands.hpp"
#include "step/capture_times.hpp"
#include "step/family_calibration.hpp"
#include "step/step_compose.hpp"
#include "step/step_memory.hpp"
#include "step/step_operators.hpp"
#include "step/step_options.hpp"
#include "step_models.hpp"
#include "temp_files.hpp"
#include "trace/trace_source.hpp"

using namespace opbench;

namespace {

// test::small_model (180,800 parameters), 3 micro-batches of 2 sequences of 32 tokens.
StepConfig small_config(Kernels kernels) {
  StepConfig c;
  c.model = test::small_model();
  c.micro_batch = 2;
  c.grad_accum = 3;
  c.dtype = DType::fp32;
  c.kernels = kernels;
  c.optimizer_impl = kernels == Kernels::eager ? OptimizerImpl::single : OptimizerImpl::fused;
  return c;
}

// `model`'s eager fp32 step of 2 micro-batches of 2 sequences of its seqlen, AdamW per tensor.
StepConfig two_by_two_eager(const ModelConfig& model) {
  StepConfig c;
  c.model = model;
  c.micro_batch = 2;
  c.grad_accum = 2;
  c.dtype = DType::fp32;
  c.kernels = Kernels::eager;
  c.optimizer_impl = OptimizerImpl::single;
  return c;
}

std::vector<StageOperators> stages_of(const StepConfig& c) {
  StageOperators stage;
  for (const auto& op : step_operators(c, 0))
    stage.push_back({op, std::nullopt});
  return {stage};
}

const StepOperator* named(const std::vector<StepOperator>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace

TEST_CASE(
    "eager plan: the same model FLOPs as the fused one, in separate projections and "
    "per-head GEMMs",
    "[step]") {
  const StepConfig eager = small_config(Kernels::eager), fused = small_config(Kernels::fused);
  CHECK(total_model_flops(eager, stages_of(eager)) == total_model_flops(fused, stages_of(fused)));
  // The eager GEMMs compute the whole causal score matrix: qk and pv forward, dp, dv, dq and dk
  // backward, each 2·2 sequences·4 heads·32²·16 = 262,144 FLOPs, over 4 layers x 3
  // micro-batches: 18,874,368 FLOPs, half of them masked out, in the hardware FLOPs only.
  CHECK(total_hardware_flops(eager, stages_of(eager)) -
            total_hardware_flops(fused, stages_of(fused)) ==
        9437184);
  const auto ops = step_operators(eager, 0);
  REQUIRE(named(ops, "attn_q fprop"));
  CHECK(named(ops, "attn_qkv fprop") == nullptr);
  CHECK(named(ops, "mlp_gate_up fprop") == nullptr);
  // scores = q·kᵀ per (sequence, head): 2 x 4 = 8 entries of 32 x 32 x 16, once per layer and
  // micro-batch: 4 x 3 = 12 calls.
  const StepOperator* qk = named(ops, "attn_qk fprop");
  REQUIRE(qk);
  CHECK(qk->gemm.batch == 8);
  CHECK(qk->gemm.m == 32);
  CHECK(qk->gemm.n == 32);
  CHECK(qk->gemm.k == 16);
  CHECK(qk->gemm.layout() == "NT");
  CHECK(qk->count == 12);
  CHECK(qk->attention_kernel);
  // The softmax over the scores: 8 x 32 rows of 32.
  const StepOperator* softmax = named(ops, "attention softmax fwd (eager)");
  REQUIRE(softmax);
  CHECK(softmax->memop.rows == 256);
  CHECK(softmax->memop.cols == 32);
  // nll's backward zero-fills a [tokens, vocab] gradient: bench_memops's fill of 64 x 256 =
  // 16384 fp32 elements, 65536 bytes written and none read.
  const StepOperator* fill = named(ops, "loss nll bwd zero fill (eager)");
  REQUIRE(fill);
  CHECK(fill->memop.op == MemOp::fill);
  CHECK(fill->memop.elements() == 16384);
  CHECK(memop_read_bytes(fill->memop) == 0);
  CHECK(memop_write_bytes(fill->memop) == 65536);
  CHECK(fill->count == 3);
  // SwiGLU as two kernels each way: silu and its gradient (bench_memops's silu), the muls.
  const StepOperator* silu = named(ops, "mlp silu bwd (eager)");
  REQUIRE(silu);
  CHECK(silu->memop.op == MemOp::silu);
  CHECK(silu->memop.pass == MemPass::bwd);
  // 2 x 32 tokens x the small model's intermediate size, x and dy read, dx written.
  CHECK(memop_io_bytes(silu->memop) == 3 * 4 * silu->memop.elements());
}

TEST_CASE("eager plan: attention's kernels count as attention, selective recompute reruns them",
          "[step]") {
  StepConfig c = small_config(Kernels::eager);
  c.recompute = Recompute::selective;
  const auto ops = step_operators(c, 0);
  REQUIRE(named(ops, "attn_qk fprop (recomputed)"));
  REQUIRE(named(ops, "attention softmax fwd (eager) (recomputed)"));
  CHECK(named(ops, "mlp silu (eager) (recomputed)") == nullptr);
  // Full recomputation reruns the layers' forward kernels, not the embedding, final norm or loss.
  StepConfig full = c;
  full.recompute = Recompute::full;
  const auto all = step_operators(full, 0);
  CHECK(named(all, "mlp silu (eager) (recomputed)"));
  CHECK(named(all, "input rmsnorm pow (eager) (recomputed)"));
  CHECK(named(all, "final rmsnorm pow (eager) (recomputed)") == nullptr);
  CHECK(named(all, "embedding fwd (eager) (recomputed)") == nullptr);
  CHECK(named(all, "loss log_softmax fwd (eager) (recomputed)") == nullptr);
  // Every operator timed 1 ms per call: the attention part is the calls of the attention
  // kernels, all of them. A layer's attention runs 7 kernels forward (q scale, QK^T, the causal
  // mask and its add, softmax, PV, the output's transpose copy), the same 7 recomputed and 7
  // backward (dP, dV, softmax's, dQ, dK, the q scale's, the transpose's): 21 kernels, each
  // called 4 layers x 3 micro-batches = 12 times, 252 ms; and GQA's repeat of k and v, twice a
  // layer forward, recomputed and backward: 3 x 24 = 72 ms more.
  StageOperators stage;
  for (const auto& op : ops)
    stage.push_back({op, OperatorTime{1000.0, "test", "cpu", std::nullopt, "measured"}});
  const StepProjection p = compose_step(c, {stage}, std::nullopt);
  CHECK(p.parts.attention_ms == Approx(21 * 12 + 3 * 24));
}

TEST_CASE(
    "eager plan with fused attention (PyTorch eager calling scaled_dot_product_attention): the "
    "fused attention operators in place of the attention core, the rest eager",
    "[step]") {
  StepConfig c = small_config(Kernels::eager);
  c.attention_kernels = Kernels::fused;
  const StepConfig fused = small_config(Kernels::fused);
  // The attention FLOPs move from six per-head GEMMs into the fused kernel's two operators:
  // the same model FLOPs as both whole-step plans.
  CHECK(total_model_flops(c, stages_of(c)) == total_model_flops(fused, stages_of(fused)));
  const auto ops = step_operators(c, 0);
  for (const char* gone :
       {"attn_qk fprop", "attn_pv bwd_dv", "attention softmax fwd (eager)",
        "attention softmax bwd (eager)", "attention q scale (eager)", "attention mask add (eager)"})
    CHECK(named(ops, gone) == nullptr);
  // 4 layers x 3 micro-batches, each way; the projections stay separate, the norms eager.
  const StepOperator* fwd = named(ops, "attention fwd");
  const StepOperator* bwd = named(ops, "attention bwd");
  REQUIRE(fwd);
  REQUIRE(bwd);
  CHECK(fwd->count == 12);
  CHECK(bwd->count == 12);
  CHECK(fwd->family == StepFamily::attention);
  // k and v were repeated to the 4 query heads before the kernel: it runs 4 KV heads, not 2.
  CHECK(fwd->attention.heads_q == 4);
  CHECK(fwd->attention.heads_kv == 4);
  CHECK(named(step_operators(fused, 0), "attention fwd")->attention.heads_kv == 2);
  CHECK(named(ops, "attn_q fprop"));
  CHECK(named(ops, "input rmsnorm pow (eager)"));
  // GQA's repeat and the output's transpose copies run outside the kernel, as the peer does.
  CHECK(named(ops, "GQA repeat of k and v (eager)"));
  CHECK(named(ops, "attention output transpose copy (eager)"));
}

TEST_CASE(
    "eager plan of a GPT-style model: addmm's biases, the learned position table and the tied "
    "table's gradient sum",
    "[step]") {
  // 2 micro-batches of 2 sequences of 32 tokens: T = 64 tokens a micro-batch.
  const StepConfig c = two_by_two_eager(test::small_gpt_model());
  const auto ops = step_operators(c, 0);
  // q's bias broadcast into its 64 x 64 output (a fill: 16 KiB written, nothing read), once a
  // layer and micro-batch; its gradient reads dy (64 x 64) and writes 64: a copy of half of
  // 4160 elements.
  const StepOperator* q_bias = named(ops, "attn_q bias broadcast into addmm's output (eager)");
  REQUIRE(q_bias);
  CHECK(q_bias->memop.op == MemOp::fill);
  CHECK(memop_write_bytes(q_bias->memop) == 64 * 64 * 4);
  CHECK(memop_read_bytes(q_bias->memop) == 0);
  CHECK(q_bias->count == 4);
  const StepOperator* up_grad = named(ops, "mlp_up bias gradient (sum over tokens) (eager)");
  REQUIRE(up_grad);
  CHECK(up_grad->memop.op == MemOp::copy);
  CHECK(up_grad->memop.elements() == (64 * 256 + 256) / 2);
  CHECK(up_grad->phase == StepPhase::backward);
  for (const char* linear : {"attn_k", "attn_v", "attn_out", "mlp_up", "mlp_down"})
    CHECK(named(ops, std::string(linear) + " bias broadcast into addmm's output (eager)"));
  CHECK(named(ops, "mlp_gate bias broadcast into addmm's output (eager)") == nullptr);
  // No bias on the small Llama model.
  for (const auto& op : step_operators(small_config(Kernels::eager), 0)) {
    CHECK(op.name.find("bias broadcast") == std::string::npos);
    CHECK(op.name.find("bias gradient") == std::string::npos);
  }
  // The position table: 32 rows looked up from a table of 32 (seqlen), added to the 64 x 64
  // token embeddings.
  const StepOperator* pos = named(ops, "position embedding fwd (eager)");
  REQUIRE(pos);
  CHECK(pos->memop.op == MemOp::embedding);
  CHECK(pos->memop.rows == 32);
  CHECK(pos->memop.vocab == 32);
  CHECK(pos->count == 2);
  // Its gradient: the embedding's backward writes all 32 rows of the table (zero where no
  // position points), so no separate zero fill is listed, nor for the token table (256 rows).
  const StepOperator* pos_bwd = named(ops, "position embedding bwd (eager)");
  REQUIRE(pos_bwd);
  CHECK(memop_write_bytes(pos_bwd->memop) == 32 * 64 * 4);
  const StepOperator* table_bwd = named(ops, "embedding bwd (eager)");
  REQUIRE(table_bwd);
  CHECK(memop_write_bytes(table_bwd->memop) == 256 * 64 * 4);
  for (const auto& op : ops)
    CHECK(op.name.find("zero fill of the table") == std::string::npos);
  CHECK(named(ops, "rope q * cos, * sin (eager)") == nullptr);
  // The tied table (256 x 64) gets the LM head's and the embedding's gradients: one add of
  // 16,384 elements a micro-batch, in both plans; none where a stage holds one of the two.
  for (Kernels kernels : {Kernels::eager, Kernels::fused}) {
    StepConfig k = c;
    k.kernels = kernels;
    const auto plan = step_operators(k, 0);
    const StepOperator* tied = named(plan, "tied embedding gradient sum");
    REQUIRE(tied);
    CHECK(tied->memop.op == MemOp::add);
    CHECK(tied->memop.elements() == 256 * 64);
    CHECK(tied->count == 2);
  }
  StepConfig two_stages = c;
  two_stages.pp = 2;
  for (std::int64_t stage : {0, 1})
    CHECK(named(step_operators(two_stages, stage), "tied embedding gradient sum") == nullptr);
  CHECK(named(step_operators(small_config(Kernels::eager), 0), "tied embedding gradient sum") ==
        nullptr);
}

TEST_CASE(
    "an MoE model's plans: the router's softmax, the permute and unpermute, the experts' loop "
    "in the eager plan, their saved outputs",
    "[step]") {
  // test::small_moe_model: 2 MoE layers of 4 experts (width 32, top-2) and a shared one, after
  // 1 dense layer. 2 micro-batches of 2 x 32 tokens: T = 64 tokens, 128 copies routed, 32 an
  // expert under balanced routing.
  StepConfig c = two_by_two_eager(test::small_moe_model());
  c.moe_impl = MoeImpl::loop;
  const auto ops = step_operators(c, 0);
  // The router's softmax over 4 experts, 64 rows, in fp32; a layer and micro-batch: 4 calls.
  const StepOperator* softmax = named(ops, "moe router softmax fwd (fp32) (eager)");
  REQUIRE(softmax);
  CHECK(softmax->memop.op == MemOp::softmax);
  CHECK(softmax->memop.rows == 64);
  CHECK(softmax->memop.cols == 4);
  CHECK(softmax->memop.dtype == DType::fp32);
  CHECK(softmax->count == 4);
  // The permute gathers the 128 copies' rows from the 64 tokens' (an embedding lookup over a
  // vocabulary of 64): 128 x 64 x 4 bytes written.
  const StepOperator* permute = named(ops, "moe permute: the copies gathered (x[token]) (eager)");
  REQUIRE(permute);
  CHECK(permute->memop.op == MemOp::embedding);
  CHECK(permute->memop.pass == MemPass::fwd);
  CHECK(permute->memop.rows == 128);
  CHECK(permute->memop.vocab == 64);
  CHECK(memop_write_bytes(permute->memop) == 128 * 64 * 4);
  // The unpermute adds them into zeros of the 64 tokens' rows: an embedding's backward, which
  // reads the 128 rows (and their ids) and writes the 64.
  const StepOperator* unpermute =
      named(ops, "moe unpermute: zeros, index_add_ of the copies (eager)");
  REQUIRE(unpermute);
  CHECK(unpermute->memop.pass == MemPass::bwd);
  CHECK(memop_write_bytes(unpermute->memop) == 64 * 64 * 4);
  // Each expert's activation is its own call on its 32 rows of width 32: 4 experts x 2 layers x
  // 2 micro-batches = 16 calls; its rows feed its gate and up, whose input gradients are summed
  // (32 x 64).
  const StepOperator* silu = named(ops, "moe experts (32 rows each) silu (eager)");
  REQUIRE(silu);
  CHECK(silu->memop.elements() == 32 * 32);
  CHECK(silu->count == 16);
  const StepOperator* expert_sum =
      named(ops, "moe experts (32 rows each) sum of gate/up input gradients (eager)");
  REQUIRE(expert_sum);
  CHECK(expert_sum->memop.elements() == 32 * 64);
  CHECK(expert_sum->count == 16);
  // The shared expert runs on all 64 tokens; its output is added to the routed ones.
  const StepOperator* shared = named(ops, "moe shared experts silu (eager)");
  REQUIRE(shared);
  CHECK(shared->memop.elements() == 64 * 32);
  CHECK(shared->count == 4);
  // The norm's output feeds the router, the permute and the shared expert: two gradient sums
  // of 64 x 64 a layer; the dense layer alone sums gate's and up's.
  const StepOperator* sums =
      named(ops, "moe input gradient sums (router, permute, shared experts) (eager)");
  REQUIRE(sums);
  CHECK(sums->memop.elements() == 64 * 64);
  CHECK(sums->count == 8);
  const StepOperator* gate_up = named(ops, "sum of gate/up input gradients (eager)");
  REQUIRE(gate_up);
  CHECK(gate_up->count == 2);
  for (const auto& op : ops)
    CHECK(op.memop.op != MemOp::swiglu);
  // The experts' GEMMs as the loop runs them, gate and up separate as Hugging Face writes them:
  // 4 per layer and micro-batch, 32 rows each.
  const StepOperator* experts = named(ops, "moe_expert_gate fprop");
  REQUIRE(experts);
  CHECK(experts->moe_impl == MoeImpl::loop);
  CHECK(experts->experts.tokens == std::vector<std::int64_t>{32, 32, 32, 32});
  CHECK(experts->experts.N == 32);
  CHECK(named(ops, "moe_expert_gate_up fprop") == nullptr);
  REQUIRE(named(ops, "moe_shared_up wgrad"));

  // The fused plan: the same softmax, the permute and unpermute each way as single kernels, and
  // SwiGLU over the 128 copies and over the 64 tokens for the shared expert.
  c.kernels = Kernels::fused;
  c.optimizer_impl = OptimizerImpl::fused;
  const auto fused = step_operators(c, 0);
  REQUIRE(named(fused, "moe router softmax bwd (fp32)"));
  const StepOperator* gather_back =
      named(fused, "moe unpermute bwd: the tokens' gradients gathered");
  REQUIRE(gather_back);
  CHECK(gather_back->memop.rows == 128);
  CHECK(gather_back->count == 4);
  const StepOperator* routed = named(fused, "swiglu fwd (routed experts: 128 tokens)");
  REQUIRE(routed);
  CHECK(routed->memop.rows == 128);
  CHECK(routed->memop.cols == 32);
  REQUIRE(named(fused, "swiglu bwd (shared experts)"));
  // Both plans' memory keeps the experts' 128 x 64 outputs for the routing weights' gradient;
  // the eager one also index_add_'s weighted source and, as the dense eager MLP, the SiLU
  // output beside the gate's and up's (128 x 32 each).
  auto saved = [](const StepConfig& of, const std::string& what) -> std::int64_t {
    for (const auto& t : layer_saved_tensors(of, true))
      if (t.what == what) return t.bytes();
    return -1;
  };
  CHECK(saved(c, "experts' output (for the routing weights' gradient)") == 128 * 64 * 4);
  CHECK(saved(c, "weighted copies (index_add_'s source)") == -1);
  CHECK(saved(c, "experts' gate/up output (SwiGLU input)") == 128 * 64 * 4);
  c.kernels = Kernels::eager;
  CHECK(saved(c, "experts' output (for the routing weights' gradient)") == 128 * 64 * 4);
  CHECK(saved(c, "weighted copies (index_add_'s source)") == 128 * 64 * 4);
  CHECK(saved(c, "experts' SiLU output") == 128 * 32 * 4);
  CHECK(saved(c, "shared experts' SiLU output") == 64 * 32 * 4);

  // At tp 2 (sequence parallel, as Megatron-Core's MoE layers require) the router and the
  // permutes see the rank's own 32 tokens, in both plans: 64 copies from 32 rows
  c.tp = 2;
  for (Kernels kernels : {Kernels::eager, Kernels::fused}) {
    c.kernels = kernels;
    c.optimizer_impl = kernels == Kernels::fused ? OptimizerImpl::fused : OptimizerImpl::foreach;
    const std::string suffix = kernels == Kernels::eager ? " (eager)" : "";
    const auto at_tp = step_operators(c, 0);
    const StepOperator* router = named(at_tp, "moe router softmax fwd (fp32)" + suffix);
    REQUIRE(router);
    CHECK(router->memop.rows == 32);
    const StepOperator* gather = named(
        at_tp, kernels == Kernels::eager ? "moe permute: the copies gathered (x[token]) (eager)"
                                         : "moe permute: the copies gathered");
    REQUIRE(gather);
    CHECK((gather->memop.rows == 64 && gather->memop.vocab == 32));
  }
}

TEST_CASE("bench_step's default experts' implementation follows the kernel plan", "[step]") {
  StepOptions o;
  o.kernels = {Kernels::fused, Kernels::eager};
  const auto configs = step_configurations(o, test::small_moe_model(), DType::fp32, Backend::cpu);
  REQUIRE(configs.size() == 2);
  CHECK(configs[0].moe_impl == MoeImpl::grouped);
  CHECK(configs[1].moe_impl == MoeImpl::loop);
  o.moe_impl = MoeImpl::padded;
  for (const auto& c : step_configurations(o, test::small_moe_model(), DType::fp32, Backend::cpu))
    CHECK(c.moe_impl == MoeImpl::padded);
}

TEST_CASE("eager optimizers: PyTorch 2's eight kernels moving 20 elements per parameter",
          "[step]") {
  // p *= ..(2) m.lerp_(g)(3) v *= ..(2) v += ..(3) sqrt(2) /=(2) +=(2) p -= ..(4): 20, each
  // kernel bench_memops's in-place one of that traffic (scale_inplace, axpy_inplace,
  // addcdiv_inplace) or sqrt.
  for (OptimizerImpl impl : {OptimizerImpl::single, OptimizerImpl::foreach}) {
    StepConfig c = small_config(Kernels::eager);
    c.optimizer_impl = impl;
    std::int64_t moved = 0, calls = 0, updates = 0;
    for (const auto& op : step_operators(c, 0))
      if (op.phase == StepPhase::optimizer) {
        moved += op.count * memop_io_bytes(op.memop) / 4;
        calls += op.count;
        if (op.memop.op == MemOp::addcdiv_inplace) updates += op.count * op.memop.elements();
        CHECK(op.memop.dtype == DType::fp32);
      }
    CHECK(moved == 20 * 180800);
    CHECK(updates == 180800);
    // single: once per tensor: 4 layers x 9 tensors (2 norms, q, k, v, o, gate, up, down) + the
    // embedding, the final norm and the LM head = 39 tensors; foreach: once.
    CHECK(calls == 8 * (impl == OptimizerImpl::single ? 39 : 1));
  }
  // Pure bf16 training: the same kernels on bf16 moments; the fused step, which bench_memops
  // has no bf16-state kernel for, as fp32 AdamW over the same bytes: 180,800 / 2 elements.
  StepConfig c = small_config(Kernels::eager);
  c.dtype = c.grad_dtype = c.optimizer_dtype = DType::bf16;
  c.optimizer_impl = OptimizerImpl::foreach;
  std::int64_t optimizer_ops = 0;
  for (const auto& op : step_operators(c, 0))
    if (op.phase == StepPhase::optimizer) {
      ++optimizer_ops;
      CHECK(op.memop.dtype == DType::bf16);
    }
  CHECK(optimizer_ops == 8);  // foreach AdamW's 8 operators
  c.optimizer_impl = OptimizerImpl::fused;
  const auto ops = step_operators(c, 0);
  const StepOperator* adamw = named(ops, "adamw");
  REQUIRE(adamw);
  CHECK(adamw->memop.op == MemOp::adamw);
  CHECK(adamw->memop.dtype == DType::fp32);
  CHECK(adamw->memop.elements() == 90400);
  CHECK(adamw->count == 1);
}

namespace {

const char* const kCaptureHeader =
    "host,rank,pid,api,kind,op,dtype,m,n,k,batch,layout,flops,bytes,count,comm_size,redop,"
    "calls,timed_calls,total_us,avg_us,min_us,p50_us,p99_us,max_us,note\n";

// The GEMM the capture tables below hold: 64 x 128 x 32, NT, fp32.
StepOperator captured_gemm() {
  StepOperator gemm;
  gemm.family = StepFamily::gemm;
  gemm.gemm.m = 64, gemm.gemm.n = 128, gemm.gemm.k = 32, gemm.gemm.transb = true;
  gemm.gemm.dtype = DType::fp32;
  return gemm;
}

}  // namespace

TEST_CASE(
    "capture times: GEMMs by shape, batched ones per entry, collectives by message, the "
    "average over every file's timed calls",
    "[step]") {
  const auto dir = test::fresh_temp_dir("capture_times");
  const std::string header = kCaptureHeader;
  std::ofstream(dir / "capture-n1-rank0.csv")
      << header
      << "n1,0,1,sgemm_,gemm,gemm,fp32,64,128,32,1,NT,,,,,,10,10,1000,100,90,80,150,200,\n"
      << "n1,0,1,MPI_Allreduce,collective,all_reduce,fp32,,,,,,,4096,1024,2,sum,4,4,400,100,90,"
         "95,120,130,\n";
  std::ofstream(dir / "capture-n1-rank1.csv")
      << header
      << "n1,1,2,sgemm_,gemm,gemm,fp32,64,128,32,1,NT,,,,,,30,30,3000,100,90,120,150,200,\n";
  const CaptureTimes times = CaptureTimes::load(ShapeSource::capture_folder(dir.string()));
  StepOperator gemm = captured_gemm();
  // (1000 + 3000) / (10 + 30) = 100 µs (the files' medians, 80 and 120 µs, play no part)
  auto t = times.find(gemm);
  REQUIRE(t);
  CHECK(t->time_us == Approx(100));
  CHECK(t->origin == "captured");
  gemm.gemm.batch = 8;  // torch.bmm on a CPU BLAS: 8 calls of one entry
  t = times.find(gemm);
  REQUIRE(t);
  CHECK(t->time_us == Approx(800));
  gemm.gemm.transb = false;  // another layout: not captured
  CHECK_FALSE(times.find(gemm));
  StepOperator coll;
  coll.family = StepFamily::collective;
  coll.collective.op = CollOp::all_reduce;
  coll.collective.dtype = DType::fp32;
  coll.collective.size_bytes = 4096;
  coll.collective.group_size = 2;
  t = times.find(coll);
  REQUIRE(t);
  CHECK(t->time_us == Approx(100));  // 400 µs over 4 calls
  coll.collective.group_size = 4;
  CHECK_FALSE(times.find(coll));
}

TEST_CASE("capture times: two APIs of one shape add up, their averages weighed by calls",
          "[step]") {
  // The later (smaller) one replaced the larger: 100 µs where the job's 40 calls averaged 175.
  const auto dir = test::fresh_temp_dir("capture_times_two_apis");
  std::ofstream(dir / "capture-n1-rank0.csv")
      << kCaptureHeader
      << "n1,0,1,sgemm_,gemm,gemm,fp32,64,128,32,1,NT,,,,,,10,10,1000,100,90,100,150,200,\n"
      << "n1,0,1,cblas_sgemm,gemm,gemm,fp32,64,128,32,1,NT,,,,,,30,30,6000,200,150,200,250,300,\n";
  const CaptureTimes times = CaptureTimes::load(ShapeSource::capture_folder(dir.string()));
  const auto t = times.find(captured_gemm());
  REQUIRE(t);
  CHECK(t->time_us == Approx(175));  // (6000 + 1000) / (30 + 10)
  CHECK_THAT(t->source, Catch::Matchers::Contains("cblas_sgemm + sgemm_"));
  CHECK_THAT(t->source, Catch::Matchers::Contains("40 calls"));
}

TEST_CASE(
    "capture times: a loop over experts, each expert's GEMM at its tokens from the job's GEMMs "
    "of that shape",
    "[step]") {
  // The job's fprop GEMMs of n 128, k 32, NT at 48 and 80 rows (its experts' at their routed
  // tokens) took 40 and 60 us; at 200 rows (a shared expert's, every token) 150 us.
  const auto dir = test::fresh_temp_dir("capture_times_experts");
  std::ofstream(dir / "capture-n1-rank0.csv")
      << kCaptureHeader
      << "n1,0,1,sgemm_,gemm,gemm,fp32,48,128,32,1,NT,,,,,,3,3,120,40,40,40,40,40,\n"
      << "n1,0,1,sgemm_,gemm,gemm,fp32,80,128,32,1,NT,,,,,,5,5,300,60,60,60,60,60,\n"
      << "n1,0,1,sgemm_,gemm,gemm,fp32,200,128,32,1,NT,,,,,,2,2,300,150,150,150,150,150,\n"
      << "n1,0,1,sgemm_,gemm,gemm,fp32,32,128,48,1,TN,,,,,,4,4,200,50,50,50,50,50,\n";
  const CaptureTimes times = CaptureTimes::load(ShapeSource::capture_folder(dir.string()));
  // The plan's experts of a layer of 128 outputs from 32 inputs, balanced at 64 rows each, one
  // at 320 (past every captured count) and one at 24 (below them): 64 lies 16/32 of the way from
  // 48 to 80, so 50 us each; 320 rows scale the largest, 200 rows' 150 us, to 240; 24 rows take
  // the smallest's 40 us.
  StepOperator experts;
  experts.family = StepFamily::experts;
  experts.moe_impl = MoeImpl::loop;
  experts.experts.pass = GemmPass::fprop;
  experts.experts.N = 128;
  experts.experts.K = 32;
  experts.experts.tokens = {64, 64, 320, 24, 0};
  experts.experts.dtype = DType::fp32;
  const auto t = times.find(experts);
  REQUIRE(t);
  CHECK(t->time_us == Approx(50 + 50 + 240 + 40));
  CHECK(t->origin == "captured");
  CHECK_THAT(t->source, Catch::Matchers::Contains("from 3 of the job's sgemm_ shapes"));
  CHECK_THAT(t->source, Catch::Matchers::Contains("5 expert GEMMs"));
  // wgrad varies k (the tokens): its 48-token expert is the job's 32 x 128 x 48 TN GEMM, 50 us.
  experts.experts.pass = GemmPass::wgrad;
  experts.experts.N = 32;
  experts.experts.K = 128;
  experts.experts.tokens = {48};
  const auto w = times.find(experts);
  REQUIRE(w);
  CHECK(w->time_us == Approx(50));
  // A grouped call is one kernel over every expert: no GEMM of the job times it, nor a loop over
  // GEMMs the job never ran.
  experts.moe_impl = MoeImpl::grouped;
  CHECK_FALSE(times.find(experts));
  experts.moe_impl = MoeImpl::loop;
  experts.experts.N = 64;
  CHECK_FALSE(times.find(experts));
}

TEST_CASE("capture times from a converted GPU trace: GEMM, attention and all-reduce kernels",
          "[step]") {
  // tests/data/trace's GPU step (test_trace.cpp works its figures out): the mm's two kernels
  // 220 µs, the flash attention forward 300 µs, the all-reduce 100 µs and the 50 µs the device
  // took to start it, long queued
  JobShapesOptions job;
  job.trace_path =
      std::string(OPBENCH_SOURCE_DIR) + "/tests/data/trace/host-a_4242.1700000000000.pt.trace.json";
  const CaptureTimes times = CaptureTimes::load(trace::job_shape_source(job));
  StepOperator gemm;
  gemm.family = StepFamily::gemm;
  gemm.gemm.m = 1024, gemm.gemm.n = 4096, gemm.gemm.k = 1024, gemm.gemm.transb = true;
  gemm.gemm.dtype = DType::bf16;
  auto t = times.find(gemm);
  REQUIRE(t);
  CHECK(t->time_us == Approx(220));
  StepOperator attention;
  attention.family = StepFamily::attention;
  attention.attention = AttentionShape{"llama", 2, 512, 512, 32, 8, 128, 128, true, DType::bf16};
  attention.attention_pass = AttentionPass::fwd;
  t = times.find(attention);
  REQUIRE(t);
  CHECK(t->time_us == Approx(300));
  attention.attention_pass = AttentionPass::bwd;  // the trace has no backward
  CHECK_FALSE(times.find(attention));
  StepOperator coll;
  coll.family = StepFamily::collective;
  coll.collective.op = CollOp::all_reduce;
  coll.collective.dtype = DType::bf16;
  coll.collective.size_bytes = 2097152;
  coll.collective.group_size = 2;
  t = times.find(coll);
  REQUIRE(t);
  CHECK(t->time_us == Approx(150));
}

TEST_CASE("capture times: GQA attention the job ran with K/V expanded to every query head",
          "[step]") {
  // The plan's h32/8 attention; the job repeated K and V to 32 heads before SDPA (as Hugging
  // Face's repeat_kv does), so its capture holds h32/32: the same attention, found there, and the
  // source says so. An h32/32 plan never takes an h32/8 row, and other sizes never match.
  const auto dir = test::fresh_temp_dir("capture_times_expanded_kv");
  std::ofstream(dir / "capture-n1-rank0.csv")
      << "host,rank,pid,source,api,kind,op,dtype,m,n,k,batch,layout,heads_q,heads_kv,seq_q,seq_kv,"
         "head_dim_qk,head_dim_v,causal,flops,bytes,count,comm_size,redop,placement,calls,"
         "timed_calls,graph_capture_calls,total_us,avg_us,min_us,p50_us,p99_us,max_us,note\n"
      << "n1,0,1,trace:gpu,aten::_scaled_dot_product_flash_attention,attention,fwd,bf16,,,,1,,32,"
         "32,4096,4096,64,64,true,,,,,,,16,16,0,4000.000,250.000,240.000,250.000,260.000,260.000,\n"
      << "n1,0,1,trace:gpu,aten::_scaled_dot_product_flash_attention,attention,fwd,bf16,,,,1,,8,"
         "2,1024,1024,64,64,true,,,,,,,4,4,0,400.000,100.000,90.000,100.000,110.000,110.000,\n";
  const CaptureTimes times = CaptureTimes::load(ShapeSource::capture_folder(dir.string()));
  StepOperator attention;
  attention.family = StepFamily::attention;
  attention.attention_pass = AttentionPass::fwd;
  attention.attention = AttentionShape{"llama", 1, 4096, 4096, 32, 8, 64, 64, true, DType::bf16};
  auto t = times.find(attention);
  REQUIRE(t);
  CHECK(t->time_us == Approx(250));  // 4000 µs over 16 calls
  CHECK_THAT(t->source, Catch::Matchers::Contains("run by the job with K/V expanded to 32 heads"));
  attention.attention.heads_kv = 32;  // the plan's MHA: the exact row
  t = times.find(attention);
  REQUIRE(t);
  CHECK_THAT(t->source, !Catch::Matchers::Contains("K/V expanded"));
  attention.attention = AttentionShape{"llama", 1, 1024, 1024, 8, 8, 64, 64, true, DType::bf16};
  CHECK_FALSE(times.find(attention));  // h8/2 was captured, not h8/8
  attention.attention = AttentionShape{"llama", 1, 2048, 2048, 32, 8, 64, 64, true, DType::bf16};
  CHECK_FALSE(times.find(attention));  // another sequence length
}

TEST_CASE("limit_cpu_threads caps the CPU providers' threads", "[step]") {
  limit_cpu_threads(1, 2);
  CHECK(parallel_threads(1000) == 1u);
  CHECK(openblas_get_num_threads() == 2);
  limit_cpu_threads(3, 1);
  CHECK(parallel_threads(1000) == 3u);
  CHECK(parallel_threads(2) == 2u);
  CHECK(openblas_get_num_threads() == 1);
  limit_cpu_threads(0, 0);
  CHECK(openblas_get_num_threads() == static_cast<int>(usable_cores()));
  CHECK(parallel_threads(1000) == usable_cores());
}

TEST_CASE(
    "family calibration: the memory-bound and optimizer operators scaled to the job's time per "
    "step, the steps counted by the GEMMs' calls",
    "[step]") {
  // Two steps of a job: the plan's GEMM (3 calls a step) 6 times; its memory-bound kernels 4000
  // µs (2000 a step), the foreach optimizer's 1000 (500 a step).
  const auto dir = test::fresh_temp_dir("family_calibration");
  // a converted trace's table (trace_convert): its rows name PyTorch's operators
  const std::string header =
      "host,rank,pid,source,api,kind,op,dtype,m,n,k,batch,layout,heads_q,heads_kv,seq_q,seq_kv,"
      "head_dim_qk,head_dim_v,causal,flops,bytes,count,comm_size,redop,placement,calls,timed_calls,"
      "graph_capture_calls,not_sampled_calls,total_us,avg_us,min_us,p50_us,p99_us,max_us,note\n";
  const std::string blank13 = ",,,,,,,,,,,,,";  // heads_q .. placement
  std::ofstream(dir / "capture-trace-rank0.csv")
      << header << "trace,0,1,trace:gpu,aten::mm,gemm,gemm,fp32,64,128,32,1,NT" << blank13
      << ",6,6,0,0,600,100,100,100,100,100,\n"
      << "trace,0,1,trace:gpu,aten::mul,memory_bound,,,,,,," << blank13
      << ",30,30,0,0,3000,100,100,100,100,100,\n"
      << "trace,0,1,trace:gpu,aten::copy_,memory_bound,,,,,,," << blank13
      << ",10,10,0,0,1000,100,100,100,100,100,\n"
      << "trace,0,1,trace:gpu,aten::_foreach_lerp_,memory_bound,,,,,,," << blank13
      << ",4,4,0,0,1000,250,250,250,250,250,\n";
  const CaptureTimes job = CaptureTimes::load(ShapeSource::capture_folder(dir.string()));
  CHECK(job.families().memop_us == Approx(4000));
  CHECK(job.families().optimizer_us == Approx(1000));
  const auto timed_op = [](StepOperator op, std::int64_t count, double us) {
    op.count = count;
    OperatorTime t;
    t.time_us = us;
    t.cv = 0.01;
    return TimedOperator{op, t};
  };
  StepOperator memop;
  memop.family = StepFamily::memop;
  memop.phase = StepPhase::forward;
  StepOperator memop_bwd = memop;
  memop_bwd.phase = StepPhase::backward;
  StepOperator optimizer = memop;
  optimizer.phase = StepPhase::optimizer;
  // planned: memory-bound 5 x 200 + 10 x 50 = 1.5 ms, the optimizer 250 µs, the GEMM 3 x 100
  const std::vector<StageOperators> planned{{timed_op(captured_gemm(), 3, 100),
                                             timed_op(memop, 5, 200), timed_op(memop_bwd, 10, 50),
                                             timed_op(optimizer, 1, 250)}};
  StepConfig c;
  auto stages = planned;
  const auto said = calibrate_families(c, stages, job);
  CHECK(said.not_done.empty());
  REQUIRE(said.scaled.size() == 2);
  CHECK_THAT(said.scaled[0], Catch::Matchers::Contains("memory-bound scaled x 1.333"));
  CHECK_THAT(said.scaled[0], Catch::Matchers::Contains("2.00 ms a step (40 calls over 2 steps)"));
  CHECK_THAT(said.scaled[1], Catch::Matchers::Contains("optimizer scaled x 2.000"));
  CHECK(stages[0][0].time->time_us == Approx(100));  // the GEMM is left as it was
  CHECK(stages[0][1].time->time_us == Approx(200 * 4.0 / 3));
  CHECK(stages[0][2].time->time_us == Approx(50 * 4.0 / 3));
  CHECK(stages[0][1].time->origin == "captured");
  CHECK_FALSE(stages[0][1].time->cv);
  CHECK(stages[0][3].time->time_us == Approx(500));
  // a pipeline's rank holds one stage's kernels: nothing is scaled, and that is said
  c.pp = 2;
  stages = planned;
  const auto at_pp2 = calibrate_families(c, stages, job);
  CHECK(at_pp2.scaled.empty());
  CHECK_THAT(at_pp2.not_done, Catch::Matchers::Contains("pp > 1"));
  CHECK(stages[0][1].time->time_us == Approx(200));
  // a trace with no backward GEMM of the plan (the forward alone) calibrates no family: its
  // memory-bound kernels are not a whole step's
  c.pp = 1;
  StepOperator dgrad = captured_gemm();
  dgrad.phase = StepPhase::backward;
  dgrad.gemm.transb = false;  // NN: a shape the trace does not hold
  auto with_backward = planned;
  with_backward[0].push_back(timed_op(dgrad, 3, 100));
  const auto forward_only = calibrate_families(c, with_backward, job);
  CHECK(forward_only.scaled.empty());
  CHECK_THAT(forward_only.not_done, Catch::Matchers::Contains("the forward alone"));
  CHECK(with_backward[0][1].time->time_us == Approx(200));
  // a capture (no memory-bound rows) calibrates no family, silently
  const auto capture_dir = test::fresh_temp_dir("family_calibration_capture");
  std::ofstream(capture_dir / "capture-n1-rank0.csv")
      << kCaptureHeader
      << "n1,0,1,sgemm_,gemm,gemm,fp32,64,128,32,1,NT,,,,,,6,6,600,100,100,100,100,100,\n";
  stages = planned;
  const auto from_capture = calibrate_families(
      c, stages, CaptureTimes::load(ShapeSource::capture_folder(capture_dir.string())));
  CHECK((from_capture.scaled.empty() && from_capture.not_done.empty()));
  CHECK(stages[0][1].time->time_us == Approx(200));
}
