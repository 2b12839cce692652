#pragma once
// bench_step's report rows (docs/outputs.md, "bench_step"): one per configuration in step.csv,
// and one per operator of its busiest stage in step_operators.csv.
#include <optional>
#include <string>

#include "common/record.hpp"
#include "step/step_compose.hpp"

namespace opbench {

// The configuration's own columns (shared by both rows, so an operator row names its step).
Record step_config_fields(const StepConfig& c);

// `times_from`: "measured", "reports" or "reports+measured"; `device`: what the times ran on.
Record step_row(const StepConfig& c, const StepProjection& p, const std::string& times_from,
                const std::string& device, std::optional<double> peak_tflops);

Record operator_row(const StepConfig& c, const TimedOperator& t, const StepProjection& p);

}  // namespace opbench
