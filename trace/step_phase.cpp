#include "trace/step_phase.hpp"

#include <algorithm>

namespace opbench::trace {
namespace {

bool is_backward_node(std::string_view name) {
  return name.starts_with("autograd::engine::evaluate_function");
}

}  // namespace

const char* phase_name(Phase p) {
  static constexpr const char* kNames[kPhases] = {"forward", "backward", "optimizer"};
  return kNames[static_cast<int>(p)];
}

bool is_optimizer_step(std::string_view name) {
  // torch.optim.Optimizer's profile_hook_step: "Optimizer.step#AdamW.step"; zero_grad's
  // "Optimizer.zero_grad#..." is not the step's update
  return name.starts_with("Optimizer.step#");
}

Phase phase_of(std::string_view name, Phase parent) {
  if (is_optimizer_step(name)) return Phase::optimizer;
  if (is_backward_node(name)) return Phase::backward;
  return parent;
}

PhaseIdle idle_by_phase(std::vector<GpuSpan>& spans) {
  PhaseIdle out;
  if (spans.empty()) return out;
  std::stable_sort(spans.begin(), spans.end(),
                   [](const GpuSpan& a, const GpuSpan& b) { return a.start_us < b.start_us; });
  double reach = spans.front().start_us;
  Phase last = Phase::forward;
  for (GpuSpan& s : spans) {
    const Phase p = s.linked ? s.phase : last;
    const auto i = static_cast<std::size_t>(p);
    out.seen[i] = true;
    if (s.start_us > reach) {
      if (s.launched_us <= reach)  // false for NaN: no launch known, the host's
        s.queued_gap_us = s.start_us - reach;
      else
        out.idle_us[i] += s.start_us - reach;
    }
    reach = std::max(reach, s.end_us);
    last = p;
  }
  return out;
}

}  // namespace opbench::trace
