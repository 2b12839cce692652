#include "gemm/gemm_row.hpp"

#include <fmt/format.h>

#include "common/measured_columns.hpp"

namespace opbench {
Record gemm_row(const GemmCase& c, const ProviderId& provider, const GemmResult& r,
                const Peaks& peaks) {
  const GemmProblem& p = c.problem;
  const bool measured = r.status != Status::skipped && !r.measurement.samples_us.empty();
  const Stats& s = r.measurement.stats;

  Record row;
  row.arg("model", c.model).arg("gemm", c.gemm).arg("pass", text_or_empty(c.pass));
  row.arg("m", p.m).arg("n", p.n).arg("k", p.k).arg("batch", p.batch);
  row.arg("transa", std::string(p.transa ? "T" : "N"))
      .arg("transb", std::string(p.transb ? "T" : "N"));
  row.arg("dtype", std::string(dtype_name(p.dtype)))
      .arg("out_dtype", std::string(dtype_name(p.out_dtype)));
  row.arg("tp", number_or_empty(c.micro_batch ? c.tp : 0))
      .arg("micro_batch", number_or_empty(c.micro_batch));
  row.arg("seqlen", number_or_empty(c.seqlen)).arg("calls_per_step", c.calls_per_step);
  const ExpertCase* x = c.experts ? &*c.experts : nullptr;
  row.arg("ep", x ? Value{x->ep} : Value{})
      .arg("routing", x ? Value{x->routing} : Value{})
      .arg("impl", x ? Value{moe_impl_name(x->impl)} : Value{});
  row.arg("ep_rank", x ? Value{std::int64_t{x->rank}} : Value{})
      .arg("experts_on_rank", x ? Value{x->experts.experts()} : Value{});
  row.arg("backend", provider.backend)
      .arg("provider", provider.name)
      .arg("device", provider.device);

  add_time_columns(row, r.measurement, measured);
  if (c.captured) {
    // The job's own average for this shape beside this run's: the ratio is the slowdown the job
    // suffered (contention, neighbours' memory traffic, overlap with communication).
    add_in_job_columns(row, *c.captured, measured ? std::optional<double>(s.mean) : std::nullopt);
  }

  const double seconds = s.mean * 1e-6;
  // Expert rows count the real tokens: FLOPs and bytes summed over the experts.
  const std::int64_t flops = c.flops();
  const std::int64_t read = x ? x->experts.read_bytes() : p.read_bytes();
  const std::int64_t write = x ? x->experts.write_bytes() : p.write_bytes();
  std::optional<double> tflops, bw;
  if (measured && seconds > 0) {
    tflops = static_cast<double>(flops) / seconds / 1e12;
    bw = static_cast<double>(read + write) / seconds / 1e9;
  }
  if (x) {
    row.metric("tokens_min", x->experts.min_tokens())
        .metric("tokens_max", x->experts.max_tokens())
        .metric("tokens_total", x->experts.total_tokens());
  } else {
    row.metric("tokens_min", Value{}).metric("tokens_max", Value{}).metric("tokens_total", Value{});
  }
  row.metric("flops", flops).optional_metric("tflops", tflops);
  row.metric("padded_flops", number_or_empty(x ? x->experts.padded_flops() : 0));
  row.optional_metric("efficiency", x ? x->experts.efficiency() : std::nullopt);
  row.metric("read_bytes", read).metric("write_bytes", write).metric("io_bytes", read + write);
  row.optional_metric("mem_bw_gbps", bw);
  row.optional_metric("arith_intensity",
                      read + write > 0 ? std::optional<double>(static_cast<double>(flops) /
                                                               static_cast<double>(read + write))
                                       : std::nullopt);
  std::optional<double> pct_flops, pct_bw;
  if (tflops && peaks.tflops(p.dtype)) pct_flops = 100.0 * *tflops / *peaks.tflops(p.dtype);
  if (bw && peaks.bandwidth_gbps()) pct_bw = 100.0 * *bw / *peaks.bandwidth_gbps();
  row.optional_metric("pct_peak_flops", pct_flops).optional_metric("pct_peak_bw", pct_bw);

  row.result("algo", text_or_empty(r.algo)).result("cache", text_or_empty(r.cache));
  row.result("working_set_bytes", number_or_empty(r.working_set_bytes));
  row.result("launches_per_sample",
             measured ? Value{std::int64_t{r.launches_per_sample}} : Value{});
  add_clock_columns(row, r.measurement);
  row.result("check",
             r.check ? Value{std::string(r.check->passed ? "passed" : "failed")} : Value{});
  row.result("check_residual", r.check ? Value{r.check->max_residual} : Value{});
  row.result("status", std::string(status_name(r.status)));
  row.result("note", text_or_empty(r.note));

  add_measurement_extras(row, r.measurement, measured);
  if (r.check) row.extra()["check_detail"] = r.check->detail;
  if (x) {
    row.extra()["expert_tokens"] = x->experts.tokens;
    row.extra()["group_expert_tokens"] = x->group_tokens;
  }
  return row;
}

}  // namespace opbench
