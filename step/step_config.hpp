#pragma once
// One training configuration bench_step projects: a model, its batch and the way it is split over
// devices (docs/formulas.md, "Training step projection"). The world is tp · pp · dp devices; a
// step processes global_batch sequences, micro_batch at a time, so each data-parallel replica
// runs m = global_batch / (micro_batch · dp) micro-batches per step (gradient accumulation).
#include <cstdint>
#include <optional>
#include <string>

#include "collectives/parallel_messages.hpp"
#include "common/dtype.hpp"
#include "common/model_config.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/moe_routing.hpp"

namespace opbench {

enum class Recompute { none, selective, full };
std::string recompute_name(Recompute r);
Recompute parse_recompute(const std::string& text);  // bad_input naming --recompute

// How the data-parallel replicas hold parameters, gradients and optimizer state:
//   ddp  every replica holds everything; gradients are all-reduced once per step (in buckets);
//   zero1 Megatron's distributed optimizer (ZeRO stage 1): as ddp, but the optimizer state and
//        fp32 master weights are sharded over dp, so the gradients are reduce-scattered (in the
//        same buckets), each rank updates its shard, and the parameters are all-gathered;
//   fsdp parameters, gradients and optimizer state sharded over all dp ranks (bench_fsdp's
//        model: all-gathers per unit forward and backward, reduce-scatters per unit);
//   hsdp sharded within groups of shard_group ranks, replicated across the groups (plus an
//        all-reduce of the gradient shards between the replicas).
enum class Sharding { ddp, zero1, fsdp, hsdp };
std::string sharding_name(Sharding s);
Sharding parse_sharding(const std::string& text);  // bad_input naming --sharding

// Which kernels run the model (docs/formulas.md, "Kernel plans"):
//   fused  what a tuned framework runs: fused QKV and gate/up projections, flash attention,
//          fused norms, activation, rotary, cross-entropy and optimizer;
//   eager  what PyTorch eager runs for a Hugging Face-style model: separate projections, every
//          norm, activation, rotary, attention step (per-head GEMMs, scale, mask, softmax, GQA
//          copies), residual, loss and optimizer kernel on its own, with the layout copies and
//          the gradient zeroing between them.
enum class Kernels { fused, eager };
std::string kernels_name(Kernels k);
Kernels parse_kernels(const std::string& text);  // bad_input naming --kernels
// --attention-kernels: the attention core's plan when it differs from the rest (PyTorch eager
// with scaled_dot_product_attention: eager norms and activations around one fused kernel).
Kernels parse_attention_kernels(const std::string& text);  // bad_input naming the flag

// How AdamW runs: fused (one kernel reads and writes every state once), foreach (PyTorch's
// multi-tensor kernels: one call per elementary operation over all parameters), single (PyTorch's
// for-loop: the elementary operations once per parameter tensor).
enum class OptimizerImpl { fused, foreach, single };
std::string optimizer_impl_name(OptimizerImpl o);
OptimizerImpl parse_optimizer_impl(const std::string& text);  // bad_input naming --optimizer-impl

struct StepConfig {
  ModelConfig model;
  std::int64_t micro_batch = 1;
  std::int64_t seqlen = 0;        // 0: the model's own
  std::int64_t global_batch = 0;  // sequences per step over all replicas (0: from grad_accum)
  std::int64_t grad_accum = 0;    // micro-batches per replica per step (0: from global_batch)
  std::int64_t tp = 1, pp = 1, vpp = 1, dp = 1, ep = 1;
  // Context parallelism (--cp, Megatron-Core's --context-parallel-size): each sequence split over
  // cp ranks, 2 · cp chunks of which rank r holds chunks r and 2 · cp − 1 − r (the causal mask's
  // work balanced), attention passing K and V around the cp ranks in a ring.
  std::int64_t cp = 1;
  // Expert tensor parallelism (--etp): the ranks that split each routed expert; 0: tp, as
  // Megatron-Core defaults it. The experts' ranks are laid out as etp · ep · (the rest) over the
  // tp · dp ranks of a stage.
  std::int64_t etp = 0;
  // MoE: Megatron-Core's token dispatcher (--moe-dispatcher), whose messages and permutes differ.
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  bool sequence_parallel = true;  // with tp > 1: norms and residuals on tokens / tp
  Sharding sharding = Sharding::ddp;
  std::int64_t shard_group = 0;  // hsdp: ranks per shard group
  int fsdp_version = 2;
  Recompute recompute = Recompute::none;
  DType dtype = DType::bf16;       // GEMMs, attention, activations
  DType grad_dtype = DType::fp32;  // gradients as they are reduced
  double overlap = 0;              // share of the data-parallel communication hidden by compute
  bool fused_grad_accum = false;   // wgrad GEMMs accumulate into the gradient (no separate add)
  std::int64_t bucket_bytes = 25LL << 20;  // ddp: gradient bucket (PyTorch DDP's 25 MiB)
  RoutingSpec routing;                     // MoE: how tokens reach experts
  MoeImpl moe_impl = MoeImpl::grouped;
  Kernels kernels = Kernels::fused;
  // The attention core's kernels when they are not `kernels`' (--attention-kernels): fused with
  // eager kernels is PyTorch eager calling scaled_dot_product_attention (a flash kernel on the
  // GPU). Eager attention inside the fused plan is refused by validate().
  std::optional<Kernels> attention_kernels;
  OptimizerImpl optimizer_impl = OptimizerImpl::fused;
  // AdamW's moments: fp32 (with fp32 master weights when dtype is below fp32: Megatron, Apex,
  // torchtitan, autocast's fp32 parameters), or dtype itself (pure bf16 training, torchtune's
  // dtype bf16: no master copy, the parameters are updated in place). --optimizer-dtype.
  DType optimizer_dtype = DType::fp32;
  // The framework's host cost of one kernel, µs (--host-us-per-kernel FORWARD[,BACKWARD]: its
  // dispatcher's, autograd's and launch's, as torch_train_step.py measures it; 0: not modelled).
  // The backward's serves the optimizer too. host_serial (the CPU): the host runs the kernels
  // itself, so each kernel's cost adds; on a GPU it shows only where a phase's launches take
  // longer than its kernels (docs/formulas.md, "Composition").
  double host_us_fwd = 0, host_us_bwd = 0;
  bool host_serial = false;

  Kernels attention() const { return attention_kernels.value_or(kernels); }
  bool master_weights() const { return optimizer_dtype == DType::fp32 && dtype != DType::fp32; }

  // A rank's tokens of a micro-batch: its 1/cp of every sequence (before tp's sequence split).
  std::int64_t tokens_per_micro_batch() const { return micro_batch * cp_seq(); }
  std::int64_t seq() const { return seqlen > 0 ? seqlen : model.seqlen; }
  std::int64_t cp_seq() const { return seq() / cp; }  // a rank's share of one sequence
  std::int64_t world() const { return tp * cp * pp * dp; }
  // The ranks a stage's gradients are reduced (and zero1's optimizer state sharded) over: the dp
  // replicas times their cp ranks (Megatron-Core's data-parallel group with context parallelism).
  std::int64_t dp_cp() const { return dp * cp; }
  std::int64_t micro_batches() const;  // m, per replica per step
  std::int64_t sequences_per_step() const { return micro_batches() * micro_batch * dp; }
  std::int64_t tokens_per_step() const { return sequences_per_step() * seq(); }
  bool sp() const { return tp > 1 && sequence_parallel; }
  std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  // The ranks the all-gather dispatcher gathers every token over (etp · ep); 0: the all-to-all
  // dispatcher (MoeLayerShape::allgather_group).
  std::int64_t allgather_group() const {
    return dispatcher == MoeDispatcher::allgather ? expert_tp() * ep : 0;
  }
  // Decoder layers of pipeline stage s (0-based): stage s holds layers [first, first + count).
  std::int64_t stage_first_layer(std::int64_t stage) const;
  std::int64_t stage_layers(std::int64_t stage) const;
};

// Throws bad_input naming the flag for a configuration that cannot be built: a degree below 1,
// pp · vpp above the layers, a global batch that micro_batch · dp does not divide, ep not
// dividing dp or the experts, FSDP together with tp or pp, an overlap outside [0, 1], ...
void validate(const StepConfig& c);

}  // namespace opbench
