#pragma once
// bench_step's report rows (docs/outputs.md, "bench_step"): one per configuration in step.csv,
// and one per operator of its busiest stage in step_operators.csv.
#include <optional>
#include <string>

#include "common/record.hpp"
#include "step/step_compose.hpp"
#include "step/step_memory.hpp"

namespace opbench {

// The configuration's own columns (shared by both rows, so an operator row names its step).
Record step_config_fields(const StepConfig& c);

// Whether a configuration's peak memory fits the device: nullopt when the capacity is unknown.
std::optional<bool> memory_fits(const StepMemory& m, std::optional<double> capacity_gib);

// `times_from`: "measured", "reports" or "reports+measured" ("none" for --dry-run: no times);
// `device`: what the times ran on; `memory`: the busiest stage's memory per rank;
// `capacity_gib`: the device's memory (nullopt: unknown, mem_capacity_gib and fits empty).
Record step_row(const StepConfig& c, const StepProjection& p, const std::string& times_from,
                const std::string& device, std::optional<double> peak_tflops,
                const StepMemory& memory, std::optional<double> capacity_gib);

Record operator_row(const StepConfig& c, const TimedOperator& t, const StepProjection& p);

}  // namespace opbench
