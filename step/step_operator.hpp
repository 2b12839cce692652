#pragma once
// One operator instance of a training step on one rank, with how often the step runs it: what
// bench_step lists, times and adds up (docs/formulas.md, "Training step projection").
#include <cstdint>
#include <string>

#include "attention/attention_shape.hpp"
#include "collectives/coll_op.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/gemm_problem.hpp"
#include "memops/memop.hpp"

namespace opbench {

enum class StepFamily { gemm, experts, attention, memop, collective };
std::string family_name(StepFamily f);

// When in the step an operator runs: forward, backward and recompute once per micro-batch;
// grad_sync (data-parallel / FSDP gradient communication) and optimizer once per step;
// param_gather (FSDP's all-gathers of parameters) per micro-batch.
enum class StepPhase { forward, backward, recompute, param_gather, grad_sync, optimizer };
std::string phase_name(StepPhase p);

// Why a collective is there: tensor parallelism (all-reduce without sequence parallelism,
// all-gather / reduce-scatter with it), expert parallelism, the pipeline, data parallelism, FSDP.
struct StepCollective {
  std::string purpose;  // "tp", "ep", "etp", "pp", "dp", "fsdp", "hsdp"
  CollOp op = CollOp::all_reduce;
  std::int64_t size_bytes = 0;  // nccl-tests' size: max(send, receive) bytes of one rank's call
  std::int64_t group_size = 1;  // ranks in the collective
  DType dtype = DType::bf16;
};

struct StepOperator {
  StepFamily family = StepFamily::gemm;
  StepPhase phase = StepPhase::forward;
  std::string name;        // "attn_qkv fprop", "rmsnorm bwd", "tp all_gather (attention in)"
  std::int64_t count = 0;  // calls per step on this rank, over all micro-batches
  // The framework's launches per step where they are not one per timed call (-1): a pass over
  // every parameter is timed in pieces of 2^28 elements, but a _foreach_ or fused optimizer
  // operator is one launch, and AccumulateGrad one per parameter tensor (the host term).
  std::int64_t launches = -1;
  std::int64_t host_launches() const { return launches >= 0 ? launches : count; }
  std::string note;
  // Counted with attention in the step's parts though measured as a GEMM or memory-bound
  // operator: the kernels of unfused attention (--kernels eager).
  bool attention_kernel = false;

  // The arguments of the family the operator belongs to (the others stay default):
  GemmProblem gemm;                     // gemm
  ExpertGemm experts;                   // experts (one call covers the rank's experts)
  MoeImpl moe_impl = MoeImpl::grouped;  // experts
  AttentionShape attention;             // attention
  AttentionPass attention_pass = AttentionPass::fwd;
  MemopCase memop;            // memop
  StepCollective collective;  // collective

  // Per call. model_flops: what Megatron's model-FLOPs formula counts for this call (GEMMs and
  // attention; 0 for everything else and for recomputation); hardware_flops: the same convention
  // including recomputed forward work (HFU).
  std::int64_t model_flops = 0;
  std::int64_t hardware_flops = 0;

  // The operator's arguments in one line: "m8192 n6144 k4096 NT bf16", "b1 s8192/8192 h8/1 ...".
  std::string args() const;
  // Two operators with the same identity run the same code on the same data sizes: timed once.
  std::string identity() const;
};

}  // namespace opbench
