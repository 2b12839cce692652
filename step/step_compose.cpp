#include "step/step_compose.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace opbench {
namespace {

// What a stage spends per step, part by part, before the pipeline and overlap models.
struct StageSums {
  double gemm = 0, attention = 0, memop = 0, critical_comm = 0, optimizer = 0;
  double grad_sync = 0, param_gather = 0;
  double backward_compute = 0;  // backward and recompute compute, all micro-batches
  double forward_compute = 0;   // forward compute, all micro-batches
  // kernels launched: the forward's, the backward's (recomputation included), the optimizer's
  double forward_kernels = 0, backward_kernels = 0, optimizer_kernels = 0;
  double compute() const { return gemm + attention + memop; }
  double critical() const { return compute() + critical_comm; }
};

// Context parallelism's ring in one phase (forward, backward or recompute): its K and V messages
// (backward also those packed with the gradients, twice the bytes) and the rank's own-chunks
// (causal) and ring-step block attention calls, each with its time a call and calls a step.
struct RingPhase {
  struct Calls {
    double us = 0, count = 0;
  };
  std::map<std::int64_t, Calls> messages;  // by size: K and V, then packed
  Calls own, block;

  void add(const TimedOperator& t) {
    const Calls calls{t.time->time_us, static_cast<double>(t.op.count)};
    if (t.op.family == StepFamily::collective)
      messages[t.op.collective.size_bytes] = calls;
    else
      (t.op.attention.causal ? own : block) = calls;
  }
  // Transformer Engine posts each step's message as the step's attention starts and waits for
  // it before the next step: a message waits only for what it takes beyond the call beside it.
  // Forward (and recomputed): cp − 1 messages a layer, beside its first cp − 1 calls, the own
  // chunks' and then blocks'. Backward: K and V alone beside the first block, the last gradients
  // alone beside the own chunks (the last step), the packed ones beside the blocks between.
  double exposed_ms(bool backward) const {
    if (messages.empty()) return 0;
    auto beyond = [](double message, double call) { return std::max(0.0, message - call); };
    const Calls kv = messages.begin()->second;
    const Calls packed = messages.size() > 1 ? messages.rbegin()->second : Calls{};
    const double us = backward ? own.count * (beyond(kv.us, block.us) + beyond(kv.us, own.us)) +
                                     packed.count * beyond(packed.us, block.us)
                               : own.count * beyond(kv.us, own.us) +
                                     (kv.count - own.count) * beyond(kv.us, block.us);
    return us / 1e3;
  }
};

StageSums sum_stage(const StageOperators& ops) {
  StageSums s;
  RingPhase ring[3];  // forward, backward, recompute
  for (const TimedOperator& t : ops) {
    const double ms = t.total_ms();
    const StepPart part = step_part(t.op);
    switch (part) {
      case StepPart::gemm:
        s.gemm += ms;
        break;
      case StepPart::attention:
        s.attention += ms;
        break;
      case StepPart::memop:
        s.memop += ms;
        break;
      case StepPart::optimizer:
        s.optimizer += ms;
        break;
      case StepPart::critical_comm:
        if (t.op.collective.purpose != "cp") s.critical_comm += ms;  // the ring's: below
        break;
      case StepPart::grad_sync:
        s.grad_sync += ms;
        break;
      case StepPart::param_gather:
        s.param_gather += ms;
        break;
    }
    const bool compute =
        part == StepPart::gemm || part == StepPart::attention || part == StepPart::memop;
    const double kernels = static_cast<double>(t.op.host_launches());
    if (compute && (t.op.phase == StepPhase::backward || t.op.phase == StepPhase::recompute)) {
      s.backward_compute += ms;
      s.backward_kernels += kernels;
    } else if (compute && t.op.phase == StepPhase::forward) {
      s.forward_compute += ms;
      s.forward_kernels += kernels;
    } else if (part == StepPart::optimizer) {
      s.optimizer_kernels += kernels;
    }
    const bool ring_part =
        t.op.family == StepFamily::attention ||
        (t.op.family == StepFamily::collective && t.op.collective.purpose == "cp");
    if (t.time && ring_part && t.op.phase <= StepPhase::recompute)
      ring[static_cast<int>(t.op.phase)].add(t);
  }
  for (int phase = 0; phase < 3; ++phase)
    s.critical_comm += ring[phase].exposed_ms(phase == static_cast<int>(StepPhase::backward));
  return s;
}

// The framework's host time the device does not hide (StepConfig::host_us_fwd): on the CPU every
// kernel's, as the host runs it; on a GPU, phase by phase (the forward, the backward, the
// optimizer), what its launches take beyond its kernels. A phase repeats the same layers, so
// the host and the device run at the slower one's pace (two stages in tandem with a queue
// between them); a GPU that waits in one phase cannot bank the time for the next.
StepBreakdown::HostWait host_wait(const StepConfig& c, const StageSums& s) {
  const double fwd = s.forward_kernels * c.host_us_fwd / 1e3;
  const double bwd = s.backward_kernels * c.host_us_bwd / 1e3;
  const double opt = s.optimizer_kernels * c.host_us_bwd / 1e3;
  if (c.host_serial) return {fwd, bwd, opt};
  return {std::max(0.0, fwd - s.forward_compute), std::max(0.0, bwd - s.backward_compute),
          std::max(0.0, opt - s.optimizer)};
}

__int128 total_flops(const StepConfig& c, const std::vector<StageOperators>& stages, bool model) {
  __int128 sum = 0;
  for (const auto& stage : stages)
    for (const TimedOperator& t : stage)
      sum += static_cast<__int128>(t.op.count) * (model ? t.op.model_flops : t.op.hardware_flops);
  return sum * c.tp * c.dp_cp();
}

}  // namespace

StepPart step_part(const StepOperator& op) {
  if (op.phase == StepPhase::optimizer) return StepPart::optimizer;
  if (op.attention_kernel) return StepPart::attention;
  switch (op.family) {
    case StepFamily::gemm:
    case StepFamily::experts:
      return StepPart::gemm;
    case StepFamily::attention:
      return StepPart::attention;
    case StepFamily::memop:
      return StepPart::memop;
    case StepFamily::collective:
      break;
  }
  if (op.phase == StepPhase::grad_sync) return StepPart::grad_sync;
  if (op.phase == StepPhase::param_gather) return StepPart::param_gather;
  return StepPart::critical_comm;
}

std::string part_name(StepPart p) {
  switch (p) {
    case StepPart::gemm:
      return "gemm";
    case StepPart::attention:
      return "attention";
    case StepPart::memop:
      return "memop";
    case StepPart::optimizer:
      return "optimizer";
    case StepPart::critical_comm:
      return "critical_comm";
    case StepPart::grad_sync:
      return "grad_sync";
    case StepPart::param_gather:
      return "param_gather";
  }
  return "?";
}

__int128 total_model_flops(const StepConfig& c, const std::vector<StageOperators>& stages) {
  return total_flops(c, stages, true);
}
__int128 total_hardware_flops(const StepConfig& c, const std::vector<StageOperators>& stages) {
  return total_flops(c, stages, false);
}

std::vector<const TimedOperator*> missing_operators(const std::vector<StageOperators>& stages) {
  std::vector<const TimedOperator*> out;
  std::set<std::pair<std::string, std::string>> named;  // once, however many stages run it
  for (const auto& stage : stages)
    for (const TimedOperator& t : stage)
      if (!t.time && named.insert({t.op.name, t.op.args()}).second) out.push_back(&t);
  return out;
}

StepProjection compose_step(const StepConfig& c, const std::vector<StageOperators>& stages,
                            std::optional<double> peak_tflops) {
  StepProjection p;
  p.model_flops = total_model_flops(c, stages);
  p.hardware_flops = total_hardware_flops(c, stages);
  for (const TimedOperator* t : missing_operators(stages))
    p.missing.push_back(fmt::format("{} [{}] ({} call{})", t->op.name, t->op.args(), t->op.count,
                                    t->op.count == 1 ? "" : "s"));

  // The busiest stage sets the pace of the pipeline: 1F1B runs m micro-batches through it, plus
  // the fill and drain of (pp - 1) micro-batch slots, (pp - 1) / vpp with interleaving.
  std::vector<StageSums> sums;
  for (const auto& stage : stages)
    sums.push_back(sum_stage(stage));
  for (std::size_t s = 1; s < sums.size(); ++s)
    if (sums[s].critical() + sums[s].optimizer > sums[p.stage].critical() + sums[p.stage].optimizer)
      p.stage = static_cast<std::int64_t>(s);
  const StageSums& s = sums[p.stage];
  const double m = static_cast<double>(c.micro_batches());
  p.micro_batch_ms = s.critical() / m;

  // Overlap: DDP's bucketed all-reduce runs under the last micro-batch's backward; FSDP's
  // parameter gathers are prefetched under the compute of every micro-batch. `overlap` is the
  // share of each that may hide, never more than the compute it hides under.
  const double grad_window = s.backward_compute / m;
  const double hidden_grad = std::min(c.overlap * s.grad_sync, grad_window);
  const double hidden_gather = std::min(c.overlap * s.param_gather, s.compute());
  p.dp_comm_ms = s.grad_sync + s.param_gather;
  p.hidden_comm_ms = hidden_grad + hidden_gather;

  p.parts.gemm_ms = s.gemm;
  p.parts.attention_ms = s.attention;
  p.parts.memop_ms = s.memop;
  p.parts.exposed_comm_ms = s.critical_comm + p.dp_comm_ms - p.hidden_comm_ms;
  p.parts.bubble_ms = static_cast<double>(c.pp - 1) / static_cast<double>(c.vpp) * p.micro_batch_ms;
  p.parts.optimizer_ms = s.optimizer;
  const StepBreakdown::HostWait host = host_wait(c, s);
  p.parts.host_by_phase = host;
  p.parts.host_ms = host.forward_ms + host.backward_ms + host.optimizer_ms;
  if (!p.missing.empty()) return p;

  p.step_ms = p.parts.total();
  const double seconds = *p.step_ms / 1e3;
  if (seconds <= 0) return p;
  const double world = static_cast<double>(c.world());
  p.tokens_per_s = static_cast<double>(c.tokens_per_step()) / seconds;
  p.tflops_per_device = static_cast<double>(p.model_flops) / seconds / world / 1e12;
  if (peak_tflops && *peak_tflops > 0) {
    p.mfu = *p.tflops_per_device / *peak_tflops;
    p.hfu = static_cast<double>(p.hardware_flops) / seconds / world / 1e12 / *peak_tflops;
  }
  return p;
}

}  // namespace opbench
