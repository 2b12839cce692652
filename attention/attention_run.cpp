#include "attention/attention_run.hpp"

#include "common/case_loop.hpp"
#include "common/measured_columns.hpp"
#include "common/text.hpp"

namespace opbench {

AttentionResult run_attention_case(AttentionProvider& provider, const AttentionCase& c,
                                   const AttentionRunOptions& run) {
  AttentionResult r = guarded_result<AttentionResult>(
      provider.unsupported(c.shape, c.pass), [&] { return provider.run(c.shape, c.pass, run); });
  if (r.status == Status::ok) append_note(r.note, noise_note(r.measurement, run.measure));
  return r;
}

Record attention_row(const AttentionCase& c, const AttentionProvider& provider,
                     const AttentionResult& r, const Peaks& peaks) {
  const AttentionShape& s = c.shape;
  const bool measured = r.status != Status::skipped && !r.measurement.samples_us.empty();
  const Stats& st = r.measurement.stats;
  Record row;
  row.arg("model", s.model)
      .arg("batch_size", s.batch)
      .arg("seqlen_q", s.seqlen_q)
      .arg("seqlen_kv", s.seqlen_kv);
  row.arg("num_head_q", s.heads_q).arg("num_head_kv", s.heads_kv).arg("head_dim_qk", s.head_dim_qk);
  row.arg("head_dim_v", s.head_dim_v).arg("causal", std::string(s.causal ? "true" : "false"));
  row.arg("dtype", std::string(dtype_name(s.dtype))).arg("pass", attention_pass_name(c.pass));
  row.arg("backend", provider.backend())
      .arg("provider", provider.name())
      .arg("device", provider.device());
  add_time_columns(row, r.measurement, measured);
  if (c.captured)
    add_in_job_columns(row, *c.captured, measured ? std::optional<double>(st.mean) : std::nullopt);
  const std::int64_t flops = s.flops(c.pass), bytes = s.io_bytes(c.pass);
  std::optional<double> tflops, bw, pct;
  if (measured && st.mean > 0) {
    tflops = static_cast<double>(flops) / st.mean / 1e6;
    bw = static_cast<double>(bytes) / st.mean / 1e3;
    if (auto peak = peaks.tflops(s.dtype)) pct = 100 * *tflops / *peak;
  }
  row.metric("flops", flops).optional_metric("tflops", tflops).metric("io_bytes", bytes);
  row.optional_metric("mem_bw_gbps", bw).optional_metric("pct_peak_flops", pct);
  row.optional_metric("max_abs_err", r.max_abs_err).optional_metric("check_tolerance", r.tolerance);
  row.result("engine", r.engine.empty() ? Value{} : Value{r.engine}).result("cache", r.cache);
  add_clock_columns(row, r.measurement);
  row.result("status", std::string(status_name(r.status)));
  std::string note = c.note;
  append_note(note, r.note);
  row.result("note", note.empty() ? Value{} : Value{note});
  add_measurement_extras(row, r.measurement, measured);
  return row;
}

}  // namespace opbench
