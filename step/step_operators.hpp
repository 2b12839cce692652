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

// Over how many ranks the optimizer state is sharded: dp with fsdp and zero1, the shard group
// with hsdp.
std::int64_t optimizer_shards(const StepConfig& config);

}  // namespace opbench
