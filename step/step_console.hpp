#pragma once
// What bench_step prints for people: the operator list of a dry run, and per configuration the
// step's figures, its breakdown and the operators that take the most time.
#include <cstdio>
#include <string>
#include <vector>

#include "step/step_compose.hpp"
#include "step/step_memory.hpp"

namespace opbench {

// --dry-run: the busiest stage's operators (by hardware FLOPs, no time known) with their counts
// and FLOPs, and the step's model FLOPs beside Megatron's formula.
void print_operator_list(const StepConfig& c, const std::vector<StageOperators>& stages,
                         std::FILE* out);

// The projection of one configuration: figures, the breakdown as a table, the top operators, and
// the operators without a time with what would measure them.
void print_projection(const StepConfig& c, const std::vector<StageOperators>& stages,
                      const StepProjection& p, std::FILE* out);
// The memory per rank (the stage with the largest peak): the peak, where in the step it is, what
// it is made of, and against the device's capacity (`capacity_source` says whose: "hardware.json:
// NVIDIA H100 SXM5 80GB", "--memory-capacity-gib", ...) whether it fits, plainly when it does not.
void print_memory(const StepMemory& m, std::optional<double> capacity_gib,
                  const std::string& capacity_source, std::FILE* out);

// The same text, as a string (the summary's "Where the step's time goes").
std::string projection_text(const StepConfig& c, const std::vector<StageOperators>& stages,
                            const StepProjection& p);

// For every eager configuration with a fused twin (the same but --kernels), both side by side per
// part of the step: what fusion buys. Empty when the configurations hold no such pair.
std::string fusion_text(const std::vector<StepConfig>& configs,
                        const std::vector<StepProjection>& projections);

}  // namespace opbench
