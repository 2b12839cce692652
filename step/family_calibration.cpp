#include "step/family_calibration.hpp"

#include <fmt/format.h>

namespace opbench {
namespace {

// The family's projected time in one step (ms) over every stage's operators that have a time.
double family_ms(const std::vector<StageOperators>& stages, StepPart part) {
  double ms = 0;
  for (const auto& stage : stages)
    for (const TimedOperator& t : stage)
      if (step_part(t.op) == part) ms += t.total_ms();
  return ms;
}

void scale(std::vector<StageOperators>& stages, StepPart part, double factor,
           const std::string& why) {
  for (auto& stage : stages)
    for (TimedOperator& t : stage)
      if (step_part(t.op) == part && t.time) {
        t.time->time_us *= factor;
        t.time->source = fmt::format("{} x {:.3f}: {}", t.time->source, factor, why);
        t.time->origin = "captured";
        t.time->cv.reset();  // the spread of the isolated samples is not the job's
        t.time->rse.reset();
      }
}

}  // namespace

FamilyCalibration calibrate_families(const StepConfig& c, std::vector<StageOperators>& stages,
                                     const CaptureTimes& job) {
  const CaptureTimes::FamilyTotals& f = job.families();
  if (f.memop_calls + f.optimizer_calls == 0) return {};
  if (c.pp > 1)
    return {{},
            "the job's memory-bound and optimizer kernels calibrate nothing at pp > 1 (a rank's "
            "trace holds its own stage's kernels): their times are isolated ones"};
  std::vector<StepOperator> ops, backward;
  for (const auto& stage : stages)
    for (const TimedOperator& t : stage) {
      ops.push_back(t.op);
      if (t.op.phase == StepPhase::backward && t.op.family == StepFamily::gemm)
        backward.push_back(t.op);
    }
  const std::optional<double> steps = job.steps_held(ops);
  if (!steps || *steps <= 0)
    return {{},
            "the job's memory-bound and optimizer kernels calibrate nothing: none of the step's "
            "GEMMs is in it, so how many steps it holds is unknown"};
  // A trace of the forward alone (an inference job, a profile cut short) holds the forward's
  // memory-bound kernels only: scaling the whole step's to them would shrink the backward's.
  if (!backward.empty() && !job.steps_held(backward))
    return {{},
            "the job's memory-bound and optimizer kernels calibrate nothing: none of the step's "
            "backward GEMMs is in it (a trace of the forward alone?), so its kernels are not a "
            "whole step's"};
  FamilyCalibration said;
  const auto calibrate = [&](StepPart part, double job_us, std::int64_t calls, const char* what) {
    const double planned = family_ms(stages, part);
    if (calls == 0 || planned <= 0) return;
    const double job_ms = job_us / 1e3 / *steps;
    const double factor = job_ms / planned;
    const std::string why =
        fmt::format("the job's {} kernels, {:.2f} ms a step ({} calls over {:.3g} step{})", what,
                    job_ms, calls, *steps, *steps == 1 ? "" : "s");
    scale(stages, part, factor, why);
    said.scaled.push_back(
        fmt::format("{} scaled x {:.3f} to {} (projected {:.2f} ms)", what, factor, why, planned));
  };
  calibrate(StepPart::memop, f.memop_us, f.memop_calls, "memory-bound");
  calibrate(StepPart::optimizer, f.optimizer_us, f.optimizer_calls, "optimizer");
  return said;
}

}  // namespace opbench
