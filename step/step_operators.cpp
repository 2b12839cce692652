#include "step/step_operators.hpp"

#include <fmt/format.h>

#include "common/rotation.hpp"

#include <algorithm>
#include <map>

#include "attention/attention_shape.hpp"
#include "common/param_layout.hpp"
#include "gemm/gemm_cases.hpp"
#include "memops/memop_cases.hpp"
#include "step/eager_plan.hpp"
#include "step/step_stage.hpp"

namespace opbench {
namespace {

// The GEMMs of every linear layer in fprop, dgrad and wgrad, bench_gemm's own model cases for
// the stage's layers (the LM head only on the last stage). A routed expert layer is one call over
// the rank's experts per MoE layer; its model FLOPs are the average rank's (tokens x top-k), its
// hardware FLOPs those of the most loaded rank, whose time the row is.
void add_gemms(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  MoeRun moe;
  moe.ep = c.ep;
  moe.etp = c.etp;
  moe.routing = c.routing;
  moe.impls = {c.moe_impl};
  const auto cases = model_cases(v.model, c.tp, {c.micro_batch}, {c.cp_seq()},
                                 {GemmPass::fprop, GemmPass::dgrad, GemmPass::wgrad}, {c.dtype},
                                 moe, c.kernels == Kernels::eager);
  for (const GemmCase& g : cases) {
    if (g.calls_per_step == 0 || (g.gemm == "lm_head" && !v.last())) continue;
    const bool forward = g.pass == pass_name(GemmPass::fprop);
    StepOperator op = make_op(StepFamily::gemm, forward ? StepPhase::forward : StepPhase::backward,
                              g.gemm + " " + g.pass, g.calls_per_step * v.m, g.note);
    op.gemm = g.problem;
    op.hardware_flops = g.problem.flops();
    // KV heads or MLA's down projections several tp ranks compute alike count once (Megatron
    // counts each head's work once; its model has no replication).
    op.model_flops = op.hardware_flops - g.repeated_flops;
    if (g.experts) {
      op.family = StepFamily::experts;
      op.experts = g.experts->experts;
      op.moe_impl = c.moe_impl;
      op.hardware_flops = op.experts.flops();
      // the average rank's: the tokens it routes (expert_routed_tokens) through N of the columns
      op.model_flops = 2 * expert_routed_tokens(c.tokens_per_micro_batch(), c.tp, c.expert_tp()) *
                       c.model.moe->num_experts_per_tok * op.experts.N * op.experts.K;
    } else if (g.gemm == "moe_router") {
      op.model_flops = 0;  // Megatron's model FLOPs leave the router out
      op.note = "router: not in Megatron's model FLOPs";
    }
    out.push_back(op);
    if (c.recompute == Recompute::full && forward && g.gemm != "lm_head")
      out.push_back(recomputed(op));
  }
}

// Attention forward and backward per layer. FLOPs in Megatron's convention (the S x S score
// matrix halved under the causal mask; backward twice the forward), so that the list adds up to
// Megatron's model FLOPs; bench_attention's flops column halves a causal mask's the same way
// (its backward counts 2.5 forwards, FlashAttention's convention).
// With context parallelism a rank runs one call per ring step (context_parallel_attention): its
// own chunks, then cp − 1 blocks that come round.
void add_attention(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  AttentionShape s =
      model_attention_shapes(v.model, {c.seq()}, {c.micro_batch}, c.dtype, c.tp).front();
  // Eager code around the fused kernel repeats k and v to every query head first (Hugging
  // Face's repeat_kv, the peer's model; the eager plan lists the copy): the kernel runs MHA.
  const bool repeated_kv = c.kernels == Kernels::eager && s.heads_kv != s.heads_q;
  if (repeated_kv) s.heads_kv = s.heads_q;
  const std::int64_t calls = v.model.num_hidden_layers * v.m;
  auto add = [&](const AttentionShape& shape, const std::string& what, std::int64_t count,
                 const std::string& note) {
    const std::int64_t whole = 2 * shape.batch * shape.heads_q * shape.seqlen_q * shape.seqlen_kv *
                               (shape.head_dim_qk + shape.head_dim_v);
    const std::int64_t fwd_flops = shape.causal ? whole / 2 : whole;
    StepOperator fwd =
        make_op(StepFamily::attention, StepPhase::forward, "attention fwd" + what, count, note);
    fwd.attention = shape;
    fwd.attention_pass = AttentionPass::fwd;
    fwd.model_flops = fwd.hardware_flops = fwd_flops;
    StepOperator bwd = fwd;
    bwd.phase = StepPhase::backward;
    bwd.name = "attention bwd" + what;
    bwd.attention_pass = AttentionPass::bwd;
    bwd.model_flops = bwd.hardware_flops = 2 * fwd_flops;
    out.push_back(fwd);
    out.push_back(bwd);
    // Selective recomputation recomputes the attention core only (Megatron's
    // --recompute-granularity selective); full recomputes it with the rest of the layer.
    if (c.recompute != Recompute::none) out.push_back(recomputed(fwd));
  };
  if (c.cp == 1) {
    add(s, "", calls, repeated_kv ? "k and v repeated to the query heads before the kernel" : "");
    return;
  }
  const CpAttention split = context_parallel_attention(s, c.cp);
  add(split.own, " (cp: the rank's own chunks)", calls,
      fmt::format("causal over the rank's {} of {} tokens", c.cp_seq(), c.seq()));
  add(split.ring, " (cp: a ring step's block)", calls * (c.cp - 1),
      fmt::format("{} ring steps a layer: the rank's queries against the earlier half of "
                  "another rank's block, unmasked",
                  c.cp - 1));
}

bool is_layer_memop(MemOp op) {
  return op != MemOp::cross_entropy && op != MemOp::embedding;
}

// The memory-bound operators: bench_memops's model cases for the stage's layers (norms,
// residual adds, the MLP activation, rotary embedding), the embedding on the first stage, the
// loss on the last. Flash attention fuses the score softmax, so it is not listed.
void add_memops(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  const MemOp norm = v.model.norm == "layernorm" ? MemOp::layernorm : MemOp::rmsnorm;
  const std::vector<MemOp> ops{norm,        MemOp::add,           MemOp::swiglu,   MemOp::gelu,
                               MemOp::rope, MemOp::cross_entropy, MemOp::embedding};
  MemopModelRun run;
  run.parameter_passes = false;  // the optimizer and the tied table's sum are listed on their own
  run.moe_layers = false;        // and the MoE layers' kernels, under the step's ep and routing
  run.tp = c.tp;
  run.micro_batches = {c.micro_batch};
  run.seqlens = {c.cp_seq()};
  run.sequence_parallel = c.sp();
  for (MemopCase mc : model_memop_cases(v.model, run, ops, {MemPass::fwd, MemPass::bwd}, c.dtype)) {
    if (mc.op == MemOp::cross_entropy && !v.last()) continue;
    if (mc.op == MemOp::embedding && !v.first()) continue;
    std::int64_t calls = mc.calls_per_step;
    if (mc.op == norm && !v.last()) --calls;  // the final norm sits on the last stage
    if (calls == 0) continue;
    const bool fwd = mc.pass == MemPass::fwd;
    StepOperator op =
        make_op(StepFamily::memop, fwd ? StepPhase::forward : StepPhase::backward,
                memop_name(mc.op) + " " + mem_pass_name(mc.pass), calls * v.m, mc.note);
    op.memop = mc;
    out.push_back(op);
    if (c.recompute == Recompute::full && fwd && is_layer_memop(mc.op)) {
      StepOperator again = recomputed(op);
      if (mc.op == norm && v.last()) again.count -= v.m;  // the final norm is not recomputed
      out.push_back(again);
    }
  }
}

// An MoE layer's memory-bound kernels in the fused plan (memops/memop_cases.hpp's
// moe_layer_memops, which bench_memops --model lists too): the router's softmax, Megatron's
// permute and unpermute each way, and the experts' activation over the most loaded EP rank's
// tokens under --routing. The eager plan lists PyTorch's kernels for the same (eager_plan.cpp).
void add_moe_memops(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  if (!v.model.moe || v.model.moe_layers() == 0 || c.kernels == Kernels::eager) return;
  const std::int64_t T = c.tokens_per_micro_batch();
  const RankLoad load = busiest_expert_rank(c, T);
  const MoeLayerShape shape{.tokens = T,
                            .tp = c.tp,
                            .routed = load.total,
                            .etp = c.expert_tp(),
                            .local_experts = v.model.moe->n_routed_experts / c.ep,
                            .allgather_group = c.allgather_group()};
  for (const MoeMemop& x : moe_layer_memops(v.model, step_memop_base(c), shape)) {
    const bool fwd = !x.backward;
    const std::string label =
        x.c.op == MemOp::swiglu || x.c.op == MemOp::gelu
            ? fmt::format("{} {} ({})", memop_name(x.c.op), mem_pass_name(x.c.pass), x.label)
            : "moe " + x.label;
    StepOperator op = make_op(StepFamily::memop, fwd ? StepPhase::forward : StepPhase::backward,
                              label, x.c.calls_per_step * v.m, "");
    op.memop = x.c;
    op.memop.note.clear();  // the label names the operator
    out.push_back(op);
    if (c.recompute == Recompute::full && fwd) out.push_back(recomputed(op));
  }
}

// AdamW over the rank's shard of the stage's parameters, once per step: fp32 throughout for an
// fp32 model, else fp32 master weights and moments with the low-precision parameters written back.
// Moments in the model's 16-bit dtype (pure bf16 training) move half an fp32 AdamW's bytes per
// parameter; bench_memops has no such kernel, so it is timed as fp32 AdamW over half the
// parameters: the same bytes.
void add_optimizer(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  const std::int64_t shards = optimizer_shards(c);
  const std::int64_t params = rank_parameters(c, v.stage).total();
  MemopCase mc;
  mc.report = mc.source = c.model.name;
  const bool low_state = c.optimizer_dtype != DType::fp32;
  mc.op = c.dtype == DType::fp32 || low_state ? MemOp::adamw : MemOp::adamw_bf16;
  mc.dtype = memop_dtype(mc.op, c.dtype);
  std::int64_t elements = optimizer_elements(c, v.stage);
  if (low_state)
    elements = ceil_div(elements * static_cast<std::int64_t>(dtype_size(c.optimizer_dtype)),
                        static_cast<std::int64_t>(dtype_size(DType::fp32)));
  const ParameterPass pass = parameter_pass(elements);
  mc.rows = 1;
  mc.cols = pass.elements;
  StepOperator op = make_op(
      StepFamily::memop, StepPhase::optimizer, memop_name(mc.op), pass.calls,
      fmt::format("the rank's shard: {} parameters of the stage after tp (the routed experts "
                  "after etp x ep) / {} shards{}{}",
                  params, shards, parameter_pass_note(pass),
                  low_state ? fmt::format("; {} moments and parameters: timed as fp32 AdamW over "
                                          "the same bytes",
                                          dtype_name(c.optimizer_dtype))
                            : ""));
  op.memop = mc;
  op.launches = 1;  // PyTorch's fused AdamW: one _fused_adamw_ call over every tensor
  out.push_back(op);
}

// A sum of gradients (a backward `add` in --grad-dtype), `times` per step, in the pass's pieces.
void add_gradient_sum(const StageView& v, const std::string& name, const ParameterPass& pass,
                      std::int64_t times, const std::string& note, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  MemopCase mc;
  mc.report = mc.source = c.model.name;
  mc.op = MemOp::add;
  mc.dtype = c.grad_dtype;
  mc.rows = 1;
  mc.cols = pass.elements;
  StepOperator op = make_op(StepFamily::memop, StepPhase::backward, name, times * pass.calls,
                            note + parameter_pass_note(pass));
  op.memop = mc;
  op.launches = times;  // one add a time however many pieces it is timed in
  out.push_back(op);
}

// Gradient accumulation: every micro-batch after the first adds its weight gradients into the
// accumulated ones (PyTorch's AccumulateGrad: grad += new, in the gradient's dtype), unless the
// wgrad GEMM accumulates in place (Megatron's gradient_accumulation_fusion, --fused-grad-accum).
void add_gradient_accumulation(const StageView& v, std::vector<StepOperator>& out) {
  if (v.m < 2 || v.c.fused_grad_accum) return;
  add_gradient_sum(v, "gradient accumulation add",
                   parameter_pass(rank_parameters(v.c, v.stage).total()), v.m - 1,
                   "grad += new for every micro-batch after the first (not with "
                   "--fused-grad-accum)",
                   out);
  std::int64_t tensors = 0;  // AccumulateGrad adds each parameter tensor's gradient apart
  for (const RankTensors& t : rank_parameter_tensors(v.c, v.stage))
    tensors += t.count;
  out.back().launches = (v.m - 1) * tensors;
}

// Tied embeddings on a stage that holds both the embedding and the LM head: the table gets a
// gradient from each, which autograd adds before the table's AccumulateGrad (PyTorch: an add
// of the table's size, every micro-batch; the profile of a GPT-2 step on the CPU shows it,
// aten::add of [50257, 768] twice, 11 ms of 1.1 s).
void add_tied_embedding_gradient_sum(const StageView& v, std::vector<StepOperator>& out) {
  const ModelConfig& m = v.c.model;
  if (!m.tie_word_embeddings || !v.first() || !v.last()) return;
  add_gradient_sum(v, "tied embedding gradient sum", tied_embedding_gradient_pass(m, v.c.tp), v.m,
                   "tie_word_embeddings: the LM head's and the embedding's gradients of the "
                   "shared table added",
                   out);
}

}  // namespace

ModelConfig stage_model(const StepConfig& c, std::int64_t stage) {
  ModelConfig m = c.model;
  const std::int64_t first = c.stage_first_layer(stage), count = c.stage_layers(stage);
  m.num_hidden_layers = count;
  if (m.moe) {
    const std::int64_t dense = c.model.moe->first_k_dense_replace;
    m.moe->first_k_dense_replace = std::clamp<std::int64_t>(dense - first, 0, count);
  }
  return m;
}

namespace {

bool routed_expert_tensor(const ParamTensor& t) {
  return t.name.rfind("experts.", 0) == 0;
}

// Calls f(tensor, how many) for every parameter tensor of the stage, before any parallelism.
template <class F>
void for_each_stage_tensor(const StepConfig& c, std::int64_t stage, F f) {
  const ModelConfig m = stage_model(c, stage);
  auto add = [&](const ModuleParams& module, std::int64_t times) {
    for (const ParamTensor& t : module.params)
      if (times > 0) f(t, times);
  };
  for (const auto& module : decoder_layer_modules(m, false))
    add(module, m.dense_mlp_layers());
  if (m.moe)
    for (const auto& module : decoder_layer_modules(m, true))
      add(module, m.moe_layers());
  const bool first = stage == 0, last = stage == c.pp - 1;
  for (const auto& module : root_modules(c.model)) {
    const bool on_stage = module.name == "embedding" ? first : last;
    if (on_stage) add(module, 1);
  }
  // Tied embeddings: the last stage keeps its own copy of the table for the LM head (Megatron).
  if (c.model.tie_word_embeddings && last && !first)
    f(ParamTensor{"lm_head.weight", {c.model.vocab_size, c.model.hidden_size}}, 1);
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> stage_parameter_tensors(const StepConfig& c,
                                                                           std::int64_t stage) {
  std::map<std::int64_t, std::int64_t> tensors;  // numel -> how many
  for_each_stage_tensor(
      c, stage, [&](const ParamTensor& t, std::int64_t times) { tensors[t.numel()] += times; });
  return {tensors.begin(), tensors.end()};
}

std::vector<RankTensors> rank_parameter_tensors(const StepConfig& c, std::int64_t stage) {
  std::map<std::pair<bool, std::int64_t>, std::int64_t> tensors;  // (expert, numel) -> how many
  for_each_stage_tensor(c, stage, [&](const ParamTensor& t, std::int64_t times) {
    const bool expert = routed_expert_tensor(t);
    tensors[{expert, ceil_div(t.numel(), expert ? c.expert_tp() : c.tp)}] += times;
  });
  std::vector<RankTensors> out;
  for (const auto& [key, count] : tensors)  // the rank holds E / ep of each layer's experts
    out.push_back({key.second, key.first ? count / c.ep : count, key.first});
  return out;
}

std::int64_t stage_parameters(const StepConfig& c, std::int64_t stage) {
  std::int64_t total = 0;
  for (const auto& [numel, count] : stage_parameter_tensors(c, stage))
    total += numel * count;
  return ceil_div(total, c.tp);
}

std::int64_t optimizer_shards(const StepConfig& c) {
  if (c.sharding == Sharding::fsdp || c.sharding == Sharding::zero1) return c.dp_cp();
  return c.sharding == Sharding::hsdp ? c.shard_group : 1;
}

RankParameters rank_parameters(const StepConfig& c, std::int64_t stage) {
  const std::int64_t params = stage_parameters(c, stage);
  if (!c.model.moe || (c.ep == 1 && c.expert_tp() == c.tp)) return {params, 0};
  std::int64_t experts = 0;
  for (const auto& module : decoder_layer_modules(c.model, true))
    for (const auto& p : module.params)
      if (routed_expert_tensor(p)) experts += p.numel();
  experts *= stage_model(c, stage).moe_layers();
  return {params - ceil_div(experts, c.tp), ceil_div(experts, c.expert_tp() * c.ep)};
}

std::int64_t expert_dp(const StepConfig& c) {
  return std::max<std::int64_t>(1, c.tp * c.dp_cp() / (c.expert_tp() * c.ep));
}

std::int64_t expert_optimizer_shards(const StepConfig& c) {
  const bool over_dp = c.sharding == Sharding::fsdp || c.sharding == Sharding::zero1;
  return over_dp ? expert_dp(c) : optimizer_shards(c);
}

std::int64_t optimizer_elements(const StepConfig& c, std::int64_t stage) {
  const RankParameters p = rank_parameters(c, stage);
  return ceil_div(p.dense, optimizer_shards(c)) + ceil_div(p.experts, expert_optimizer_shards(c));
}

std::vector<StepOperator> step_operators(const StepConfig& c, std::int64_t stage) {
  validate(c);
  const StageView v{c, stage, stage_model(c, stage), c.micro_batches()};
  std::vector<StepOperator> out;
  add_gemms(v, out);
  if (c.kernels == Kernels::eager) {
    add_eager_layer_kernels(v, out);  // the attention core too unless it is fused
    if (c.attention() == Kernels::fused && v.model.num_hidden_layers > 0) add_attention(v, out);
  } else {
    add_attention(v, out);
    add_memops(v, out);
  }
  add_moe_memops(v, out);
  add_tied_embedding_gradient_sum(v, out);
  add_gradient_accumulation(v, out);
  if (c.optimizer_impl == OptimizerImpl::fused)
    add_optimizer(v, out);
  else
    add_eager_optimizer(v, out);
  for (StepOperator& op : step_collectives(c, stage))
    out.push_back(std::move(op));
  return out;
}

}  // namespace opbench
