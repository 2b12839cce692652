// The collectives of one training step on one rank (docs/formulas.md, "Training step
// projection", collectives): Megatron's tensor-parallel pattern with and without sequence
// parallelism, the MoE all-to-all, pipeline sends, and the data-parallel gradient reduction
// (DDP buckets, or bench_fsdp's per-unit plan for FSDP and HSDP).
#include <fmt/format.h>

#include "fsdp/fsdp_plan.hpp"
#include "step/step_operators.hpp"

namespace opbench {
namespace {

struct Emit {
  const StepConfig& c;
  std::vector<StepOperator>& out;
  void operator()(const std::string& purpose, CollOp op, StepPhase phase, std::int64_t bytes,
                  std::int64_t group, DType dtype, std::int64_t count, const std::string& what) {
    if (count <= 0 || group <= 1 || bytes <= 0) return;
    StepOperator s;
    s.family = StepFamily::collective;
    s.phase = phase;
    s.name = fmt::format("{} {} ({})", purpose, coll_op_name(op), what);
    s.count = count;
    s.collective = {purpose, op, bytes, group, dtype};
    out.push_back(s);
  }
};

// Per decoder layer and micro-batch, Megatron's tensor parallelism (Korthikanti et al. 2022):
//   without sequence parallelism: an all-reduce after the attention and after the MLP output
//     projections in forward, and one of the input gradient of the QKV and up projections in
//     backward: 2 + 2;
//   with it: forward all-gathers the sequence-split input of the QKV and up projections (2) and
//     reduce-scatters the outputs of the attention and MLP output projections (2); backward
//     all-gathers that input again for the weight gradient (2), all-gathers the output
//     projections' output gradient (2) and reduce-scatters the input gradients (2).
// Full recomputation repeats the forward's collectives. Every buffer is the whole activation
// tokens x hidden (nccl-tests' size: the gathered or scattered buffer).
void add_tensor_parallel(const StepConfig& c, std::int64_t stage, Emit& emit) {
  if (c.tp == 1) return;
  const std::int64_t m = c.micro_batches(), layers = c.stage_layers(stage);
  const std::int64_t T = c.tokens_per_micro_batch();
  const std::int64_t act = T * c.model.hidden_size * static_cast<std::int64_t>(dtype_size(c.dtype));
  const std::int64_t again = c.recompute == Recompute::full ? 1 : 0;
  const auto AG = CollOp::all_gather, RS = CollOp::reduce_scatter, AR = CollOp::all_reduce;
  const auto F = StepPhase::forward, B = StepPhase::backward, R = StepPhase::recompute;
  const bool first = stage == 0, last = stage == c.pp - 1;
  if (c.sp()) {
    emit("tp", AG, F, act, c.tp, c.dtype, 2 * layers * m, "inputs of QKV and up projections");
    emit("tp", RS, F, act, c.tp, c.dtype, 2 * layers * m, "outputs of attention and MLP");
    emit("tp", AG, B, act, c.tp, c.dtype, 4 * layers * m,
         "inputs again for wgrad, output gradients");
    emit("tp", RS, B, act, c.tp, c.dtype, 2 * layers * m, "input gradients");
    emit("tp", AG, R, act, c.tp, c.dtype, 2 * layers * m * again, "recomputed forward");
    emit("tp", RS, R, act, c.tp, c.dtype, 2 * layers * m * again, "recomputed forward");
    // The vocabulary-parallel embedding's output is reduce-scattered into the sequence split,
    // and the LM head's input gathered from it.
    if (first) {
      emit("tp", RS, F, act, c.tp, c.dtype, m, "embedding output");
      emit("tp", AG, B, act, c.tp, c.dtype, m, "embedding output gradient");
    }
    if (last) {
      emit("tp", AG, F, act, c.tp, c.dtype, m, "LM head input");
      emit("tp", RS, B, act, c.tp, c.dtype, m, "LM head input gradient");
    }
  } else {
    emit("tp", AR, F, act, c.tp, c.dtype, 2 * layers * m, "outputs of attention and MLP");
    emit("tp", AR, B, act, c.tp, c.dtype, 2 * layers * m, "input gradients");
    emit("tp", AR, R, act, c.tp, c.dtype, 2 * layers * m * again, "recomputed forward");
    if (first) emit("tp", AR, F, act, c.tp, c.dtype, m, "embedding output");
    if (last) emit("tp", AR, B, act, c.tp, c.dtype, m, "LM head input gradient");
  }
  // Vocabulary-parallel cross-entropy: the logits' max, the target logit and the sum of
  // exponentials are each all-reduced over tp, one fp32 value per token.
  if (last) emit("tp", AR, F, T * 4, c.tp, DType::fp32, 3 * m, "cross-entropy max, target, sum");
}

// MoE with expert parallelism: per MoE layer and micro-batch, the dispatch and combine
// all-to-all in forward and again in backward (and in the recomputed forward); each rank sends
// its tokens' top-k copies (its sequence-parallel share of the tokens with sp).
void add_expert_parallel(const StepConfig& c, std::int64_t stage, Emit& emit) {
  if (c.ep == 1) return;
  const ModelConfig sm = stage_model(c, stage);
  const std::int64_t layers = sm.moe_layers(), m = c.micro_batches();
  const std::int64_t tokens = c.tokens_per_micro_batch() / (c.sp() ? c.tp : 1);
  const std::int64_t bytes = tokens * c.model.moe->num_experts_per_tok * c.model.hidden_size *
                             static_cast<std::int64_t>(dtype_size(c.dtype));
  const std::int64_t again = c.recompute == Recompute::full ? 1 : 0;
  emit("ep", CollOp::all_to_all, StepPhase::forward, bytes, c.ep, c.dtype, 2 * layers * m,
       "dispatch and combine");
  emit("ep", CollOp::all_to_all, StepPhase::backward, bytes, c.ep, c.dtype, 2 * layers * m,
       "dispatch and combine gradients");
  emit("ep", CollOp::all_to_all, StepPhase::recompute, bytes, c.ep, c.dtype, 2 * layers * m * again,
       "recomputed forward");
}

// Pipeline: per micro-batch (and per virtual chunk) a stage exchanges its activation with the
// next stage and the gradient with the previous one; 1F1B pairs each send with a receive (one
// send_recv), so an inner stage has two per micro-batch and the first and last stage one.
void add_pipeline(const StepConfig& c, std::int64_t stage, Emit& emit) {
  if (c.pp == 1) return;
  const std::int64_t m = c.micro_batches();
  const std::int64_t bytes = c.tokens_per_micro_batch() / (c.sp() ? c.tp : 1) *
                             c.model.hidden_size * static_cast<std::int64_t>(dtype_size(c.dtype));
  const bool inner = stage > 0 && stage < c.pp - 1;
  // With virtual stages every chunk is a pipeline stage of its own: every rank is inner.
  const std::int64_t per_mb = c.vpp > 1 ? 2 * c.vpp : (inner ? 2 : 1);
  emit("pp", CollOp::send_recv, StepPhase::forward, bytes, 2, c.dtype, (per_mb + 1) / 2 * m,
       "activations");
  emit("pp", CollOp::send_recv, StepPhase::backward, bytes, 2, c.dtype, per_mb / 2 * m,
       "gradients");
}

// DDP: the stage's gradients (its parameters / tp) all-reduced over the dp replicas once per
// step, in buckets of bucket_bytes (the last one holds the rest).
void add_ddp(const StepConfig& c, std::int64_t stage, Emit& emit) {
  const std::int64_t bytes =
      stage_parameters(c, stage) * static_cast<std::int64_t>(dtype_size(c.grad_dtype));
  const std::int64_t full = bytes / c.bucket_bytes, rest = bytes % c.bucket_bytes;
  emit("dp", CollOp::all_reduce, StepPhase::grad_sync, c.bucket_bytes, c.dp, c.grad_dtype, full,
       "gradient buckets");
  emit("dp", CollOp::all_reduce, StepPhase::grad_sync, rest, c.dp, c.grad_dtype, 1,
       "last gradient bucket");
}

// FSDP / HSDP: bench_fsdp's plan (one unit per decoder layer plus the root). Parameters are
// gathered in every micro-batch's forward (and again for backward when resharded); gradients are
// reduce-scattered (and, with HSDP, all-reduced across the replicas) once per step, gradient
// synchronisation being off for the other micro-batches.
void add_fsdp(const StepConfig& c, Emit& emit) {
  FsdpConfig f;
  f.world_size = c.dp;
  f.version = c.fsdp_version;
  f.param_dtype = c.dtype;
  f.reduce_dtype = c.grad_dtype;
  f.shard_group_size = c.sharding == Sharding::hsdp ? c.shard_group : 0;
  const std::string purpose = sharding_name(c.sharding);
  for (const PlanEntry& e : fsdp_plan(fsdp_units(c.model, WrapPolicy::layer), f)) {
    const bool gather = e.op == CollOp::all_gather;
    emit(purpose, e.op, gather ? StepPhase::param_gather : StepPhase::grad_sync, e.buffer_bytes(),
         e.group_size, e.dtype, e.calls_per_step * (gather ? c.micro_batches() : 1),
         fmt::format("{} {}", e.unit, e.phase));
  }
}

}  // namespace

std::vector<StepOperator> step_collectives(const StepConfig& c, std::int64_t stage) {
  std::vector<StepOperator> out;
  Emit emit{c, out};
  add_tensor_parallel(c, stage, emit);
  add_expert_parallel(c, stage, emit);
  add_pipeline(c, stage, emit);
  if (c.dp > 1) {
    if (c.sharding == Sharding::ddp)
      add_ddp(c, stage, emit);
    else
      add_fsdp(c, emit);
  }
  return out;
}

}  // namespace opbench
