#pragma once
// The phase of a training step an operator of a PyTorch profiler trace belongs to, from the names
// PyTorch itself records, and the GPU's idle time split by phase: where the device waited for the
// host, which a projection's host term (bench_step --host-us-per-kernel) models per phase.
//   backward   an operator inside "autograd::engine::evaluate_function: ..." (the autograd
//              engine wraps every node it runs in one, on the calling thread on the CPU and on
//              its device thread on a GPU)
//   optimizer  an operator inside "Optimizer.step#<Class>.step" (torch.optim's record_function
//              around every optimizer's step)
//   forward    everything else: the forward, the loss, zero_grad, the inputs' copies
// Kineto writes a record_function of Python's (RecordScope::USER_SCOPE, the optimizer's) as a
// "user_annotation" event and every other scope, the autograd engine's included, as a "cpu_op"
// (scopeToType in PyTorch's torch/csrc/profiler/collection.cpp); the optimizer's name is
// Optimizer.profile_hook_step's in torch/optim/optimizer.py.
#include <array>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace opbench::trace {

enum class Phase : std::uint8_t { forward, backward, optimizer };
inline constexpr int kPhases = 3;

const char* phase_name(Phase p);
// The optimizer's step annotation (a user_annotation event, not an operator).
bool is_optimizer_step(std::string_view name);
// The phase of an operator named `name` whose enclosing operator on its thread is in `parent`
// (Phase::forward for a top-level one).
Phase phase_of(std::string_view name, Phase parent);

// A kernel (or copy, or memset) on one device: its interval and the phase of the operator that
// launched it; `linked` false where no operator of the trace launched it.
struct GpuSpan {
  double start_us = 0, end_us = 0;
  Phase phase = Phase::forward;
  bool linked = true;
  // When the host's launch call for it returned (its cuda_runtime or cuda_driver event's end),
  // NaN where the trace has none (a kernel no launch correlates with)
  double launched_us = std::numeric_limits<double>::quiet_NaN();
  std::int64_t owner = -1;  // the caller's index of the operator that launched it
  // Set by idle_by_phase: the device's wait before it while it was already queued
  double queued_gap_us = 0;
};

struct PhaseIdle {
  std::array<double, kPhases> idle_us{};  // by Phase
  std::array<bool, kPhases> seen{};       // the phase had a kernel on the device
  double total_us() const { return idle_us[0] + idle_us[1] + idle_us[2]; }
};

// The device's idle time between its first kernel's start and its last one's end, each gap
// charged to the phase of the kernel that ends it (the GPU waited for that kernel's launch). A
// kernel no operator launched takes the phase of the kernel before it in time (forward if first).
// A gap before a kernel the host had launched by the time the device was free is not a wait
// for the host: it is the device's own cost of starting the next queued kernel (about 1 µs
// between an H200's back-to-back kernels), which an event-timed run of an operator includes, so
// it goes into that span's queued_gap_us (the caller adds it to the operator's time), not the
// idle time. Sorts `spans` by start.
PhaseIdle idle_by_phase(std::vector<GpuSpan>& spans);

}  // namespace opbench::trace
