#pragma once
// From the times of a step's operators to the step's time (docs/formulas.md, "Training step
// projection"): per micro-batch compute and the communication on its critical path, the
// pipeline bubble, the data-parallel communication left exposed by the overlap model, and the
// optimizer; then tokens/s, TFLOPS per device, MFU and HFU.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "step/operator_times.hpp"
#include "step/step_config.hpp"
#include "step/step_operator.hpp"

namespace opbench {

struct TimedOperator {
  StepOperator op;
  std::optional<OperatorTime> time;  // nullopt: no report row and not measured
  double total_ms() const { return time ? static_cast<double>(op.count) * time->time_us / 1e3 : 0; }
};

// A stage's operators and their times.
using StageOperators = std::vector<TimedOperator>;

// Which part of the step an operator's time counts in: its family's, but the optimizer's kernels
// count as the optimizer, eager attention's GEMMs and memory-bound kernels as attention, and the
// collectives by when they run (on the critical path, or data-parallel: grad_sync, param_gather).
enum class StepPart { gemm, attention, memop, optimizer, critical_comm, grad_sync, param_gather };
StepPart step_part(const StepOperator& op);
std::string part_name(StepPart p);  // the step_operators.csv column `part`

struct StepBreakdown {
  double gemm_ms = 0;          // GEMMs and grouped expert GEMMs, recomputation included
  double attention_ms = 0;     // attention forward, backward and recomputed
  double memop_ms = 0;         // memory-bound operators (the optimizer apart)
  double exposed_comm_ms = 0;  // tp/ep/pp collectives, and what overlap leaves of dp/FSDP's
  double bubble_ms = 0;        // the pipeline's fill and drain
  double optimizer_ms = 0;
  double host_ms = 0;  // the framework's host time the device waits for (--host-us-per-kernel)
  // host_ms by the phase whose kernels wait: what a GPU profiler trace's idle time by phase
  // measures (trace/step_phase.hpp). Not added to the total again.
  struct HostWait {
    double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  } host_by_phase;
  double total() const {
    return gemm_ms + attention_ms + memop_ms + exposed_comm_ms + bubble_ms + optimizer_ms + host_ms;
  }
};

struct StepProjection {
  std::int64_t stage = 0;  // the busiest pipeline stage, whose rank the figures are
  // "name [args] (N calls)" of every operator without a time (missing_operators).
  std::vector<std::string> missing;
  std::optional<double> step_ms;  // the breakdown's total when nothing is missing
  StepBreakdown parts;
  double micro_batch_ms = 0;  // compute and critical-path communication per micro-batch
  double dp_comm_ms = 0;      // data-parallel / FSDP communication before overlap
  double hidden_comm_ms = 0;  // the part of it the overlap model hides
  __int128 model_flops = 0, hardware_flops = 0;  // per step over every device, exact
  std::optional<double> tokens_per_s, tflops_per_device, mfu, hfu;
};

// The operators without a time, each name-and-arguments once (the first stage that runs it),
// so two operators that share arguments (FSDP's forward and backward all-gathers) are both named.
std::vector<const TimedOperator*> missing_operators(const std::vector<StageOperators>& stages);

// Sum over every device of count x FLOPs (model or hardware): the stages' lists times tp x dp.
__int128 total_model_flops(const StepConfig& c, const std::vector<StageOperators>& stages);
__int128 total_hardware_flops(const StepConfig& c, const std::vector<StageOperators>& stages);

// `peak_tflops`: the device's dense peak for the dtype, for MFU and HFU (nullopt: left empty).
StepProjection compose_step(const StepConfig& c, const std::vector<StageOperators>& stages,
                            std::optional<double> peak_tflops);

}  // namespace opbench
