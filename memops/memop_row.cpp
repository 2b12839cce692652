#include "memops/memop_row.hpp"

#include <fmt/format.h>

#include "common/measured_columns.hpp"
#include "common/text.hpp"
#include "memops/memop_operands.hpp"

namespace opbench {

bool memop_measured(const MemopResult& r) {
  return r.status != Status::skipped && !r.measurement.samples_us.empty();
}

bool against_device_memory(const MemopCase& c) {
  return !is_copy(c.op) || c.op == MemOp::copy;
}

Record memop_row(const MemopCase& c, const MemopProvider& provider, const MemopResult& r,
                 const BandwidthRoof& roof, std::optional<double> copy_same_bytes_gbps) {
  const bool measured = memop_measured(r);
  const Stats& s = r.measurement.stats;
  const bool peer = c.op == MemOp::peer || c.op == MemOp::peer_all;

  Record row;
  row.arg("model", c.source).arg("op", memop_name(c.op)).arg("pass", mem_pass_name(c.pass));
  row.arg("rows", c.rows).arg("cols", c.cols);
  row.arg("heads", number_or_empty(c.heads))
      .arg("kv_heads", number_or_empty(c.kv_heads))
      .arg("head_dim", number_or_empty(c.head_dim))
      .arg("vocab", number_or_empty(c.vocab));
  row.arg("devices", peer ? Value{std::int64_t{c.devices}} : Value{});
  row.arg("dtype", std::string(dtype_name(c.dtype)));
  row.arg("tp", number_or_empty(c.micro_batch ? c.tp : 0))
      .arg("micro_batch", number_or_empty(c.micro_batch))
      .arg("seqlen", number_or_empty(c.seqlen))
      .arg("calls_per_step", c.calls_per_step);
  row.arg("backend", provider.backend())
      .arg("provider", provider.name())
      .arg("device", provider.device());

  add_time_columns(row, r.measurement, measured);

  const double seconds = s.mean * 1e-6;
  std::optional<double> bw, copy_bw, pct;
  if (measured && seconds > 0) {
    bw = static_cast<double>(memop_io_bytes(c)) / seconds / 1e9;
    if (is_copy(c.op)) copy_bw = static_cast<double>(c.copied_bytes()) / seconds / 1e9;
  }
  // Link copies (host <-> device, peer) are held to no memory roof: the link is slower.
  const bool memory_roof = against_device_memory(c);
  std::string note = r.note;
  if (bw && roof.gbps && memory_roof) pct = 100.0 * *bw / *roof.gbps;
  // A measured roof is the best a simple loop reached on this machine; an operator that streams
  // faster (its run was luckier, or its access pattern suits the prefetchers better) is at the
  // roof, and the note gives both figures, so pct_peak_bw stays within 0-100.
  if (pct && *pct > 100 && roof.measured) {
    append_note(note, fmt::format("above the measured roof: {:.1f} GB/s against the best loop's "
                                  "{:.1f} GB/s, shown as 100%",
                                  *bw, *roof.gbps));
    pct = 100.0;
  }
  row.metric("read_bytes", memop_read_bytes(c))
      .metric("write_bytes", memop_write_bytes(c))
      .metric("io_bytes", memop_io_bytes(c));
  row.optional_metric("mem_bw_gbps", bw);
  row.metric("copied_bytes", number_or_empty(c.copied_bytes()))
      .optional_metric("copy_gbps", copy_bw);
  row.optional_metric("pct_peak_bw", pct);
  row.optional_metric("roof_gbps", memory_roof ? roof.gbps : std::nullopt);
  row.result("roof", memory_roof ? text_or_empty(roof.source) : Value{});
  // Against the run's own copy rate: no cap at 100 (an operator that reads more than it writes
  // can stream faster than a copy), and nothing for link copies.
  const bool by_copy = memory_roof && roof.copy_gbps && *roof.copy_gbps > 0;
  row.optional_metric("copy_rate_gbps", by_copy ? roof.copy_gbps : std::nullopt);
  row.optional_metric("pct_of_copy", by_copy && bw
                                         ? std::optional<double>(100.0 * *bw / *roof.copy_gbps)
                                         : std::nullopt);
  // A row of a few MB pays its launch and its last wave as a copy of the same bytes would: its
  // share of such a copy says how much of the shortfall against the run's copy is its size's.
  const bool by_same = memory_roof && copy_same_bytes_gbps && *copy_same_bytes_gbps > 0;
  row.optional_metric("copy_same_bytes_gbps", by_same ? copy_same_bytes_gbps : std::nullopt);
  row.optional_metric(
      "pct_of_copy_same_bytes",
      by_same && bw ? std::optional<double>(100.0 * *bw / *copy_same_bytes_gbps) : std::nullopt);

  row.result("impl", text_or_empty(r.impl)).result("cache", text_or_empty(r.cache));
  row.result("working_set_bytes", number_or_empty(r.working_set_bytes));
  add_clock_columns(row, r.measurement);
  row.result("check",
             r.check_passed ? Value{std::string(*r.check_passed ? "passed" : "failed")} : Value{});
  row.optional_metric("max_abs_err", r.max_abs_err).optional_metric("tolerance", r.tolerance);
  row.result("status", std::string(status_name(r.status)));
  row.result("note", text_or_empty(note));

  add_measurement_extras(row, r.measurement, measured);
  if (!r.check_detail.empty()) row.extra()["check_detail"] = r.check_detail;
  return row;
}

}  // namespace opbench
