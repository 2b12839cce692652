#pragma once
// Every operator instance of one training step on one rank of a pipeline stage, with its count
// per step (docs/formulas.md, "Training step projection", lists what is counted and why).
#include <cstdint>
#include <utility>
#include <vector>

#include "step/step_config.hpp"
#include "step/step_operator.hpp"

namespace opbench {

// The operators a rank of pipeline stage `stage` runs in one step: compute (GEMMs in three
// passes, the routed experts as grouped GEMMs, attention forward and backward, the memory-bound
// operators, recomputation), the optimizer on the rank's shard, and its collectives. Counts cover
// all the step's micro-batches; operators a stage does not run (count 0) are left out.
std::vector<StepOperator> step_operators(const StepConfig& config, std::int64_t stage);

// The collectives of that rank (part of step_operators; step_collectives.cpp).
std::vector<StepOperator> step_collectives(const StepConfig& config, std::int64_t stage);

// The model as one pipeline stage sees it: its decoder layers only (with the dense layers of
// DeepSeek's first_k_dense_replace that fall in it).
ModelConfig stage_model(const StepConfig& config, std::int64_t stage);

// Parameters a rank of the stage holds before data-parallel sharding: its layers, the embedding
// on the first stage, the final norm and LM head on the last, divided over tp (rounded up).
std::int64_t stage_parameters(const StepConfig& config, std::int64_t stage);

// The parameter tensors of the stage before tp (numel -> how many such tensors), as a
// framework's optimizer loops over them (PyTorch's single-tensor AdamW runs per tensor).
std::vector<std::pair<std::int64_t, std::int64_t>> stage_parameter_tensors(const StepConfig& config,
                                                                           std::int64_t stage);

// The parameter tensors one rank of the stage holds (numel on the rank, how many such tensors), as
// PyTorch's single-tensor AdamW and AccumulateGrad loop over them: the routed experts' (expert)
// E / ep of each MoE layer after etp, the rest after tp.
struct RankTensors {
  std::int64_t numel = 0, count = 0;
  bool expert = false;
};
std::vector<RankTensors> rank_parameter_tensors(const StepConfig& config, std::int64_t stage);

// Over how many ranks the optimizer state is sharded: dp with fsdp and zero1, the shard group
// with hsdp.
std::int64_t optimizer_shards(const StepConfig& config);

// The parameters a rank of the stage holds, as Megatron-Core holds and reduces them: the routed
// experts' (the stage's / (etp · ep)), whose gradients go over the ranks holding the same experts
// (expert_dp), and the rest (after tp), over the dp replicas. With ep 1 and etp = tp both groups
// are the dp replicas, and every parameter counts as dense.
struct RankParameters {
  std::int64_t dense = 0, experts = 0;
  std::int64_t total() const { return dense + experts; }
};
RankParameters rank_parameters(const StepConfig& config, std::int64_t stage);
// The ranks of a stage that hold the same experts: tp · dp / (etp · ep).
std::int64_t expert_dp(const StepConfig& config);
// The parameters of the rank's optimizer shard: the dense ones over optimizer_shards, the
// experts' over the ranks holding the same experts instead (expert_dp) with zero1 and fsdp, as
// Megatron-Core's distributed optimizer shards them.
std::int64_t optimizer_elements(const StepConfig& config, std::int64_t stage);
// Over how many ranks the routed experts' optimizer state is sharded: expert_dp with zero1 and
// fsdp, else as optimizer_shards.
std::int64_t expert_optimizer_shards(const StepConfig& config);

}  // namespace opbench
