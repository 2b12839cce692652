#pragma once
// bench_step --trace-path (or --capture-path of a converted trace): the memory-bound operators
// and the optimizer calibrated as families. The job runs its own eager kernels (PyTorch's mul,
// copy_, cat, _foreach_lerp_ ...), which no isolated operator of the plan matches one by one, so
// each family's operators are scaled together until their sum is the job's own time for that
// family in one step (docs/formulas.md, "Calibration from a capture").
#include <string>
#include <vector>

#include "step/capture_times.hpp"
#include "step/step_compose.hpp"
#include "step/step_config.hpp"

namespace opbench {

// Scales the memory-bound operators (StepPart::memop) and the optimizer's of every stage by the
// job's time for that family per step over the plan's; their OperatorTime then says so in its
// source and is "captured". Returns a line for each family it calibrated or could not ("" when
// the source has no memory-bound time: a capture, an execution trace). Only with one pipeline
// stage: a rank's trace holds its own stage's kernels, not the busiest stage's.
std::vector<std::string> calibrate_families(const StepConfig& c,
                                            std::vector<StageOperators>& stages,
                                            const CaptureTimes& job);

}  // namespace opbench
