#include "step/step_console.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "common/progress.hpp"
#include "step/megatron_flops.hpp"

namespace opbench {
namespace {

std::string kernels_text(const StepConfig& c) {
  std::string text;
  if (c.kernels != Kernels::fused || c.optimizer_impl != OptimizerImpl::fused)
    text = fmt::format(", {} kernels", kernels_name(c.kernels));
  if (c.attention() != c.kernels)
    text +=
        fmt::format("{} {} attention", text.empty() ? "," : " with", kernels_name(c.attention()));
  if (c.kernels != Kernels::fused || c.optimizer_impl != OptimizerImpl::fused)
    text += fmt::format(", adamw {}", optimizer_impl_name(c.optimizer_impl));
  if (c.optimizer_dtype != DType::fp32)
    text += fmt::format(", {} optimizer state", dtype_name(c.optimizer_dtype));
  return text;
}

std::string config_line(const StepConfig& c) {
  std::string line = fmt::format(
      "{}: world {} = tp {}{} x pp {} x dp {}{}{}, {} micro-batch{} of {} x {} tokens per "
      "replica, recompute {}, {}",
      c.model.name, c.world(), c.tp, c.cp > 1 ? fmt::format(" x cp {}", c.cp) : "", c.pp, c.dp,
      c.vpp > 1 ? fmt::format(" (vpp {})", c.vpp) : "",
      fmt::format(
          "{}{}{}", c.ep > 1 ? fmt::format(", ep {}", c.ep) : "",
          c.model.moe && c.expert_tp() != c.tp ? fmt::format(", etp {}", c.expert_tp()) : "",
          c.model.moe && c.dispatcher != MoeDispatcher::alltoall
              ? fmt::format(", {} dispatcher", moe_dispatcher_name(c.dispatcher))
              : ""),
      c.micro_batches(), c.micro_batches() == 1 ? "" : "es", c.micro_batch, c.seq(),
      recompute_name(c.recompute), dtype_name(c.dtype));
  if (c.tp > 1) line += c.sp() ? ", sequence parallel" : ", no sequence parallelism";
  if (c.sharding != Sharding::ddp) line += ", " + sharding_name(c.sharding);
  return line + kernels_text(c);
}

std::string flops_text(double flops) {
  return fmt::format("{:.4g} PFLOP", flops / 1e15);
}

// The command that measures an operator no report held, with the arguments bench_step matches
// reports by (report_times.cpp): a collective under mpirun with nccl-tests' size, a GEMM or a
// memory-bound operator as a one-case sweep, attention as its shapes-file entry. A rotary
// embedding (a sweep's heads are not the model's) and routed experts (their token counts come
// from the routing) are left to bench_step --measure.
std::string measure_hint(const StepConfig& c, const StepOperator& op) {
  switch (op.family) {
    case StepFamily::collective: {
      const StepCollective& k = op.collective;
      return fmt::format("mpirun -np {} bench_ccl --op {} -b {} -e {} -d {}", k.group_size,
                         coll_op_name(k.op), k.size_bytes, k.size_bytes, dtype_name(k.dtype));
    }
    case StepFamily::gemm: {
      const GemmProblem& g = op.gemm;
      return fmt::format("bench_gemm -m {} -n {} -k {}{} --layout {} --dtype {}", g.m, g.n, g.k,
                         g.batch > 1 ? fmt::format(" --batch {}", g.batch) : "", g.layout(),
                         dtype_name(g.dtype));
    }
    case StepFamily::memop: {
      const MemopCase& m = op.memop;
      if (m.op == MemOp::rope) break;
      return fmt::format("bench_memops --op {} --pass {} --size {} --cols {}{} --dtype {}",
                         memop_name(m.op), mem_pass_name(m.pass), m.elements(), m.cols,
                         m.op == MemOp::embedding ? fmt::format(" --vocab {}", m.vocab) : "",
                         dtype_name(m.dtype));
    }
    case StepFamily::attention: {
      AttentionShape named = op.attention;
      named.model = c.model.name;  // the file's entries name their model
      return fmt::format("bench_attention --pass {} --shapes-json-path FILE, FILE holding [{}]",
                         attention_pass_name(op.attention_pass),
                         attention_shapes_entry(named).dump());
    }
    case StepFamily::experts:
      break;
  }
  return "bench_step --measure (it measures what no report holds)";
}

}  // namespace

void print_operator_list(const StepConfig& c, const std::vector<StageOperators>& stages,
                         std::FILE* out) {
  std::size_t busiest = 0;
  auto flops = [](const StageOperators& s) {
    double f = 0;
    for (const auto& t : s)
      f += static_cast<double>(t.op.count) * static_cast<double>(t.op.hardware_flops);
    return f;
  };
  for (std::size_t s = 1; s < stages.size(); ++s)
    if (flops(stages[s]) > flops(stages[busiest])) busiest = s;
  fmt::print(out, "{}\nstage {} of {} (the most FLOPs), every operator of one step:\n",
             config_line(c), busiest, stages.size());
  fmt::print(out, "  {:<10} {:<12} {:<60} {:>6} {:>11}  {}\n", "family", "phase", "operator",
             "count", "GFLOP/call", "arguments");
  for (const auto& t : stages[busiest]) {
    const double gflop = static_cast<double>(t.op.hardware_flops) / 1e9;
    fmt::print(out, "  {:<10} {:<12} {:<60} {:>6} {:>11}  {}\n", family_name(t.op.family),
               phase_name(t.op.phase), t.op.name, t.op.count,
               gflop > 0 ? fmt::format("{:.3f}", gflop) : "-", t.op.args());
  }
  const double model = static_cast<double>(total_model_flops(c, stages));
  const double hardware = static_cast<double>(total_hardware_flops(c, stages));
  fmt::print(out,
             "{} operators; model FLOPs per step over {} devices: {} (hardware, with recomputed, "
             "replicated and masked-out work: {})\n",
             stages[busiest].size(), c.world(), flops_text(model), flops_text(hardware));
  if (auto megatron = megatron_model_flops(c.model, c.sequences_per_step(), c.seq(), c.tp))
    fmt::print(out, "Megatron's model-FLOPs formula: {}{}\n",
               flops_text(static_cast<double>(*megatron)),
               *megatron == total_model_flops(c, stages) ? " (equal)" : "");
}

void print_projection(const StepConfig& c, const std::vector<StageOperators>& stages,
                      const StepProjection& p, std::FILE* out) {
  fmt::print(out, "\n{}\n", config_line(c));
  if (!p.step_ms) {
    fmt::print(out, "  no step time: {} operator{} without a time (never counted as zero):\n",
               p.missing.size(), p.missing.size() == 1 ? "" : "s");
    for (const TimedOperator* t : missing_operators(stages))
      fmt::print(out, "    {} [{}]  ({} call{})  measure: {}\n", t->op.name, t->op.args(),
                 t->op.count, t->op.count == 1 ? "" : "s", measure_hint(c, t->op));
    return;
  }
  const double step = *p.step_ms;
  fmt::print(out, "  step {}  |  {:.1f} tokens/s  |  {:.3g} TFLOPS per device",
             time_text(step * 1e3), *p.tokens_per_s, *p.tflops_per_device);
  if (p.mfu) fmt::print(out, "  |  MFU {:.1f}%  HFU {:.1f}%", 100 * *p.mfu, 100 * *p.hfu);
  fmt::print(out, "  (busiest stage {})\n", p.stage);
  struct Part {
    const char* name;
    double ms;
    bool always;  // else only where it is modelled (non-zero)
  };
  const Part parts[] = {{"GEMM", p.parts.gemm_ms, true},
                        {"attention", p.parts.attention_ms, true},
                        {"memory-bound", p.parts.memop_ms, true},
                        {"exposed communication", p.parts.exposed_comm_ms, true},
                        {"pipeline bubble", p.parts.bubble_ms, true},
                        {"optimizer", p.parts.optimizer_ms, true},
                        {"host (framework)", p.parts.host_ms, false}};
  for (const Part& part : parts)
    if (part.always || part.ms > 0)
      fmt::print(out, "  {:<22} {:>12}  {:5.1f}%\n", part.name, time_text(part.ms * 1e3),
                 step > 0 ? 100 * part.ms / step : 0.0);
  if (p.parts.host_ms > 0) {  // where the device waits: what a GPU trace's idle time splits
    const auto& h = p.parts.host_by_phase;
    fmt::print(out, "  (host: the forward {}, the backward {}, the optimizer {})\n",
               time_text(h.forward_ms * 1e3), time_text(h.backward_ms * 1e3),
               time_text(h.optimizer_ms * 1e3));
  }
  if (p.dp_comm_ms > 0)
    fmt::print(out, "  (data-parallel communication {}, of which the overlap model hides {})\n",
               time_text(p.dp_comm_ms * 1e3), time_text(p.hidden_comm_ms * 1e3));
  std::vector<const TimedOperator*> top;
  for (const auto& t : stages[static_cast<std::size_t>(p.stage)])
    top.push_back(&t);
  std::sort(top.begin(), top.end(),
            [](const auto* a, const auto* b) { return a->total_ms() > b->total_ms(); });
  fmt::print(out, "  the operators that take the most time:\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(8, top.size()); ++i)
    fmt::print(out, "    {:5.1f}%  {:>10}  {:>6} x {:>10}  {}\n", 100 * top[i]->total_ms() / step,
               time_text(top[i]->total_ms() * 1e3), top[i]->op.count,
               time_text(top[i]->time->time_us), top[i]->op.name);
}

void print_memory(const StepMemory& m, std::optional<double> capacity_gib,
                  const std::string& capacity_source, std::FILE* out) {
  auto gib = [](std::int64_t bytes) { return static_cast<double>(bytes) / kGiB; };
  const double peak = gib(m.peak());
  fmt::print(out, "  memory per rank (stage {}): peak {:.2f} GiB {}", m.stage, peak,
             m.peak_in_backward()       ? "at the start of the backward"
             : m.peak_at_backward_end() ? "at the end of the backward"
                                        : "in the optimizer step");
  if (!capacity_gib)
    fmt::print(out, "; device memory unknown (--memory-capacity-gib GiB to check it)\n");
  else if (m.peak() <= *capacity_gib * kGiB)
    fmt::print(out, ", fits in {:.1f} GiB ({})\n", *capacity_gib, capacity_source);
  else
    fmt::print(out, "\n  DOES NOT FIT: {:.2f} GiB needed, {:.1f} GiB available ({})\n", peak,
               *capacity_gib, capacity_source);
  if (m.peak_in_backward())
    fmt::print(
        out,
        "    weights {:.2f} + optimizer state {:.2f} + gradients {:.2f} + activations {:.2f} "
        "({:.3g} micro-batch{} in flight) + transient {:.2f} GiB\n",
        gib(m.weights), gib(m.optimizer), gib(m.grads_in_backward), gib(m.activations), m.in_flight,
        m.in_flight == 1 ? "" : "es", gib(m.backward_transient));
  else
    fmt::print(
        out,
        "    weights {:.2f} + optimizer state {:.2f} + gradients {:.2f} + {} {:.2f} GiB "
        "(backward's peak {:.2f} GiB, activations {:.2f})\n",
        gib(m.weights), gib(m.optimizer), gib(m.grads),
        m.peak_at_backward_end() ? "the tied table's second gradient" : "the step's temporaries",
        gib(m.peak_at_backward_end() ? m.backward_end_transient : m.optimizer_transient),
        gib(m.backward_peak()), gib(m.activations));
}

}  // namespace opbench

namespace opbench {

std::string projection_text(const StepConfig& c, const std::vector<StageOperators>& stages,
                            const StepProjection& p) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  if (!out) return "";
  print_projection(c, stages, p, out);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

std::string fusion_text(const std::vector<StepConfig>& configs,
                        const std::vector<StepProjection>& projections) {
  std::string out;
  auto base = [](StepConfig c) {  // the configuration but its kernels
    c.kernels = Kernels::fused;
    c.attention_kernels.reset();
    c.optimizer_impl = OptimizerImpl::fused;
    return config_line(c);
  };
  for (std::size_t e = 0; e < configs.size(); ++e) {
    if (configs[e].kernels != Kernels::eager || !projections[e].step_ms) continue;
    for (std::size_t f = 0; f < configs.size(); ++f) {
      if (configs[f].kernels != Kernels::fused || !projections[f].step_ms ||
          base(configs[f]) != base(configs[e]))
        continue;
      const StepBreakdown &a = projections[e].parts, &b = projections[f].parts;
      out += fmt::format(
          "what fusion buys: {}\n  {:<22} {:>16} {:>16} {:>12}\n", base(configs[e]), "",
          fmt::format("eager ({})", optimizer_impl_name(configs[e].optimizer_impl)),
          fmt::format("fused ({})", optimizer_impl_name(configs[f].optimizer_impl)), "fused saves");
      // "fused saves": the share of the eager time fusion removes (negative: fused is slower).
      auto row = [&](const char* part, double x, double y) {
        out += fmt::format("  {:<22} {:>16} {:>16} {:>12}\n", part, time_text(x * 1e3),
                           time_text(y * 1e3),
                           x > 0 ? fmt::format("{:.0f}%", 100 * (x - y) / x) : "-");
      };
      row("GEMM", a.gemm_ms, b.gemm_ms);
      row("attention", a.attention_ms, b.attention_ms);
      row("memory-bound", a.memop_ms, b.memop_ms);
      row("optimizer", a.optimizer_ms, b.optimizer_ms);
      row("exposed communication", a.exposed_comm_ms, b.exposed_comm_ms);
      row("pipeline bubble", a.bubble_ms, b.bubble_ms);
      if (a.host_ms > 0 || b.host_ms > 0) row("host (framework)", a.host_ms, b.host_ms);
      row("step", a.total(), b.total());
      out += "\n";
    }
  }
  return out;
}

}  // namespace opbench
