// The collectives of one training step on one rank (docs/formulas.md, "Training step
// projection", collectives): Megatron's tensor-parallel pattern with and without sequence
// parallelism, the MoE all-to-all and expert-tensor-parallel gathers, pipeline sends, and the
// data-parallel gradient reduction (DDP buckets, or bench_fsdp's per-unit plan for FSDP and HSDP).
#include <fmt/format.h>

#include <tuple>

#include "collectives/parallel_messages.hpp"
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

// Tensor and expert parallelism, per micro-batch: the messages of collectives/parallel_messages
// (the source bench_ccl --model lists too), in every layer (or MoE layer) of the stage, on the
// first or last stage, and the layers' forward ones again under full recomputation.
void add_model_parallel(const StepConfig& c, std::int64_t stage, Emit& emit) {
  ParallelShape shape;
  shape.tokens = c.tokens_per_micro_batch();
  shape.hidden = c.model.hidden_size;
  shape.tp = c.tp;
  shape.sp = c.sp();
  shape.ep = c.ep;
  shape.etp = c.expert_tp();
  shape.top_k = c.model.moe ? c.model.moe->num_experts_per_tok : 0;
  shape.dispatcher = c.dispatcher;
  shape.cp = c.cp;
  shape.kv_width = c.cp > 1 ? kv_elements_per_token(c.model, c.tp) : 0;
  shape.dtype = c.dtype;
  const ModelConfig layers = stage_model(c, stage);  // the stage's
  const std::int64_t moe_layers = layers.moe_layers();
  auto units = [&](MessageScope scope) -> std::int64_t {
    switch (scope) {
      case MessageScope::per_layer:
        return c.stage_layers(stage);
      case MessageScope::per_tp_mlp_layer:
        return layers.tp_mlp_layers();
      case MessageScope::per_moe_layer:
        return moe_layers;
      case MessageScope::first_stage:
        return stage == 0 ? 1 : 0;
      case MessageScope::last_stage:
        return stage == c.pp - 1 ? 1 : 0;
    }
    return 0;
  };
  const std::int64_t m = c.micro_batches();
  auto group_of = [&](MessageGroup g) -> std::pair<const char*, std::int64_t> {
    switch (g) {
      case MessageGroup::ep:
        return {"ep", c.ep};
      case MessageGroup::etp:
        return {"etp", shape.etp};
      case MessageGroup::tp_ep:
        return {"etp*ep", shape.etp * c.ep};
      case MessageGroup::cp:
        return {"cp", c.cp};
      case MessageGroup::tp:
        break;
    }
    return {"tp", c.tp};
  };
  for (const auto& messages : {tensor_parallel_messages(shape), context_parallel_messages(shape),
                               expert_parallel_messages(shape)}) {
    for (const ParallelMessage& x : messages) {
      const auto [purpose, group] = group_of(x.group);
      emit(purpose, x.op, x.pass == MessagePass::forward ? StepPhase::forward : StepPhase::backward,
           x.bytes, group, x.dtype, x.count * units(x.scope) * m, x.what);
    }
    // (selective recomputation reruns the attention core, and with it context parallelism's ring)
    for (const ParallelMessage& x : messages)
      if (x.recomputed() &&
          (c.recompute == Recompute::full ||
           (c.recompute == Recompute::selective && x.group == MessageGroup::cp))) {
        const auto [purpose, group] = group_of(x.group);
        emit(purpose, x.op, StepPhase::recompute, x.bytes, group, x.dtype,
             x.count * units(x.scope) * m, "recomputed forward");
      }
  }
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

// DDP: the stage's gradients (its parameters / tp) all-reduced over the dp · cp ranks once per
// step, in buckets of bucket_bytes (the last one holds the rest). zero1 (Megatron's distributed
// optimizer) splits each all-reduce into its two halves: the gradient buckets reduce-scattered
// (each rank keeps the shard it updates), then the updated parameters, in the model's dtype,
// all-gathered in buckets of the same element count (an all-reduce is a reduce-scatter plus an
// all-gather of the same buffer; nccl-tests' sizes are the whole buffer). With expert parallelism
// (or etp other than tp) the routed experts' gradients are reduced apart, in buckets of their
// own, over the ranks that hold the same experts (expert_dp, Megatron-Core's expert
// data-parallel group), the rest over the dp · cp ranks (Megatron-Core's dp-cp group).
void add_ddp(const StepConfig& c, std::int64_t stage, Emit& emit) {
  const std::int64_t grad_size = static_cast<std::int64_t>(dtype_size(c.grad_dtype));
  const std::int64_t param_size = static_cast<std::int64_t>(dtype_size(c.dtype));
  const RankParameters params = rank_parameters(c, stage);
  auto buckets = [&](std::int64_t parameters, std::int64_t group, const std::string& whose) {
    const std::int64_t bytes = parameters * grad_size;
    const std::int64_t full = bytes / c.bucket_bytes, rest = bytes % c.bucket_bytes;
    const std::string purpose = c.sharding == Sharding::zero1 ? "zero1" : "dp";
    const std::string gradient = whose + "gradient bucket";
    if (c.sharding == Sharding::zero1) {
      emit(purpose, CollOp::reduce_scatter, StepPhase::grad_sync, c.bucket_bytes, group,
           c.grad_dtype, full, gradient + "s");
      emit(purpose, CollOp::reduce_scatter, StepPhase::grad_sync, rest, group, c.grad_dtype, 1,
           "last " + gradient);
      emit(purpose, CollOp::all_gather, StepPhase::param_gather,
           c.bucket_bytes / grad_size * param_size, group, c.dtype, full,
           whose + "parameter buckets");
      emit(purpose, CollOp::all_gather, StepPhase::param_gather, rest / grad_size * param_size,
           group, c.dtype, 1, "last " + whose + "parameter bucket");
      return;
    }
    emit(purpose, CollOp::all_reduce, StepPhase::grad_sync, c.bucket_bytes, group, c.grad_dtype,
         full, gradient + "s");
    emit(purpose, CollOp::all_reduce, StepPhase::grad_sync, rest, group, c.grad_dtype, 1,
         "last " + gradient);
  };
  buckets(params.dense, c.dp_cp(), "");
  buckets(params.experts, expert_dp(c), "expert ");
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
  add_model_parallel(c, stage, emit);
  add_pipeline(c, stage, emit);
  if (c.dp_cp() > 1) {
    if (c.sharding == Sharding::ddp || c.sharding == Sharding::zero1)
      add_ddp(c, stage, emit);
    else
      add_fsdp(c, emit);
  }
  return out;
}

}  // namespace opbench
