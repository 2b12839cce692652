#include "step/step_rows.hpp"

#include <fmt/format.h>

#include "common/text.hpp"

namespace opbench {
namespace {

Value optional_value(const std::optional<double>& v) {
  return v ? Value{*v} : Value{};
}

std::string join_missing(const std::vector<std::string>& missing) {
  std::string out =
      fmt::format("no time for {} operator{}: ", missing.size(), missing.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < missing.size(); ++i)
    out += (i ? "; " : "") + missing[i];
  return out;
}

}  // namespace

Record step_config_fields(const StepConfig& c) {
  Record r;
  r.arg("model", c.model.name)
      .arg("world_size", c.world())
      .arg("tp", c.tp)
      .arg("cp", c.cp)
      .arg("pp", c.pp)
      .arg("vpp", c.vpp)
      .arg("dp", c.dp)
      .arg("ep", c.ep)
      // empty for a dense model, as in reports written before the column
      .arg("etp", c.model.moe ? std::to_string(c.expert_tp()) : std::string())
      .arg("moe_dispatcher", c.model.moe ? moe_dispatcher_name(c.dispatcher) : std::string());
  r.arg("sp", std::string(c.sp() ? "yes" : "no"))
      .arg("sharding", sharding_name(c.sharding))
      .arg("recompute", recompute_name(c.recompute))
      .arg("kernels", kernels_name(c.kernels))
      .arg("attention_kernels", kernels_name(c.attention()))
      .arg("optimizer_impl", optimizer_impl_name(c.optimizer_impl))
      .arg("optimizer_dtype", std::string(dtype_name(c.optimizer_dtype)))
      .arg("micro_batch", c.micro_batch)
      .arg("seqlen", c.seq())
      .arg("micro_batches", c.micro_batches())
      .arg("global_batch", c.sequences_per_step());
  r.arg("dtype", std::string(dtype_name(c.dtype))).arg("overlap", c.overlap);
  return r;
}

std::optional<bool> memory_fits(const StepMemory& m, std::optional<double> capacity_gib) {
  if (!capacity_gib) return std::nullopt;
  return static_cast<double>(m.peak()) <= *capacity_gib * kGiB;
}

Record step_row(const StepConfig& c, const StepProjection& p, const std::string& times_from,
                const std::string& device, std::optional<double> peak_tflops,
                const StepMemory& memory, std::optional<double> capacity_gib) {
  Record r = step_config_fields(c);
  r.arg("times_from", times_from).arg("device", device);
  r.metric("step_time_ms", optional_value(p.step_ms))
      .metric("tokens_per_s", optional_value(p.tokens_per_s))
      .metric("tflops_per_device", optional_value(p.tflops_per_device))
      .metric("mfu", optional_value(p.mfu))
      .metric("hfu", optional_value(p.hfu))
      .metric("peak_tflops", optional_value(peak_tflops));
  const bool whole = p.step_ms.has_value();
  auto part = [&](double v) { return whole ? Value{v} : Value{}; };
  r.metric("gemm_ms", part(p.parts.gemm_ms))
      .metric("attention_ms", part(p.parts.attention_ms))
      .metric("memop_ms", part(p.parts.memop_ms))
      .metric("exposed_comm_ms", part(p.parts.exposed_comm_ms))
      .metric("bubble_ms", part(p.parts.bubble_ms))
      .metric("optimizer_ms", part(p.parts.optimizer_ms))
      .metric("host_ms", part(p.parts.host_ms))
      .metric("host_forward_ms", part(p.parts.host_by_phase.forward_ms))
      .metric("host_backward_ms", part(p.parts.host_by_phase.backward_ms))
      .metric("host_optimizer_ms", part(p.parts.host_by_phase.optimizer_ms));
  r.metric("micro_batch_ms", part(p.micro_batch_ms))
      .metric("dp_comm_ms", part(p.dp_comm_ms))
      .metric("hidden_comm_ms", part(p.hidden_comm_ms))
      .metric("busiest_stage", p.stage)
      .metric("model_flops", exact_count(p.model_flops))
      .metric("hardware_flops", exact_count(p.hardware_flops))
      .metric("tokens_per_step", c.tokens_per_step());
  // Memory per rank of the stage with the largest peak (docs/formulas.md, "Memory per rank").
  auto gib = [](std::int64_t bytes) { return Value{static_cast<double>(bytes) / kGiB}; };
  const std::optional<bool> fits = memory_fits(memory, capacity_gib);
  r.metric("mem_weights_gib", gib(memory.weights))
      .metric("mem_grads_gib", gib(memory.grads))
      .metric("mem_optimizer_gib", gib(memory.optimizer))
      .metric("mem_activations_gib", gib(memory.activations))
      .metric("mem_peak_gib", gib(memory.peak()))
      .metric("mem_capacity_gib", optional_value(capacity_gib))
      .metric("fits", fits ? Value{std::string(*fits ? "true" : "false")} : Value{});
  r.result("status", std::string(status_name(whole ? Status::ok : Status::skipped)));
  // No operator missing and no step: --dry-run, which times nothing.
  const std::string why = p.missing.empty() ? "dry run: no times" : join_missing(p.missing);
  r.result("note", whole ? Value{} : Value{why});
  return r;
}

Record operator_row(const StepConfig& c, const TimedOperator& t, const StepProjection& p) {
  Record r = step_config_fields(c);
  const StepOperator& op = t.op;
  r.arg("stage", p.stage)
      .arg("family", family_name(op.family))
      .arg("phase", phase_name(op.phase))
      .arg("part", part_name(step_part(op)))
      .arg("operator", op.name)
      .arg("args", op.args())
      .arg("count", op.count);
  std::optional<double> time_us, total_ms, share;
  if (t.time) {
    time_us = t.time->time_us;
    total_ms = t.total_ms();
    if (p.step_ms && *p.step_ms > 0) share = *total_ms / *p.step_ms;
  }
  r.metric("time_us", optional_value(time_us))
      .metric("total_ms", optional_value(total_ms))
      .metric("share_of_step", optional_value(share))
      .metric("model_flops", op.model_flops)
      .metric("hardware_flops", op.hardware_flops);
  // the time's own noise and where it ran, so that two runs' operators compare as the
  // families' reports do (compare_reports.py: the band, and the host's rerun floor)
  r.metric("cv", t.time && t.time->cv ? Value{*t.time->cv} : Value{});
  r.metric("rse", t.time && t.time->rse ? Value{*t.time->rse} : Value{});
  r.result("time_from", t.time ? Value{t.time->origin} : Value{});
  r.result("device", t.time && !t.time->device.empty() ? Value{t.time->device} : Value{});
  r.result("source", t.time ? Value{t.time->source} : Value{});
  r.result("status", std::string(t.time ? "ok" : "missing"));
  r.result("note", op.note.empty() ? Value{} : Value{op.note});
  return r;
}

}  // namespace opbench
