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

struct FamilyCalibration {
  std::vector<std::string> scaled;  // a line for each family scaled: its factor and why
  // why the job's kernels calibrate nothing ("" where they did, or where the source has none to
  // offer: a capture, an execution trace)
  std::string not_done;
};

// Scales the memory-bound operators (StepPart::memop) and the optimizer's of every stage by the
// job's time for that family per step over the plan's; their OperatorTime then says so in its
// source and is "captured". Not with more than one pipeline stage (a rank's trace holds its own
// stage's kernels, not the busiest stage's), nor from a source that holds none of the step's
// backward GEMMs (a trace of the forward alone: its kernels are not a whole step's).
FamilyCalibration calibrate_families(const StepConfig& c, std::vector<StageOperators>& stages,
                                     const CaptureTimes& job);

}  // namespace opbench
