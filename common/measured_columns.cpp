#include "common/measured_columns.hpp"

namespace opbench {

Value number_or_empty(std::int64_t v) {
  return v > 0 ? Value{v} : Value{};
}

Value text_or_empty(const std::string& s) {
  return s.empty() ? Value{} : Value{s};
}

void add_time_columns(Record& row, const Measurement& m, bool measured) {
  const Stats& s = m.stats;
  auto timed = [&](double v) { return measured ? Value{v} : Value{}; };
  row.metric("time_us", timed(s.mean)).metric("median_us", timed(s.median));
  row.metric("min_us", timed(s.min)).metric("max_us", timed(s.max));
  row.metric("stddev_us", timed(s.stddev)).metric("p99_us", timed(s.p99)).metric("cv", timed(s.cv));
  row.metric("samples", measured ? Value{static_cast<std::int64_t>(s.count)} : Value{});
  row.metric("rse", timed(s.rse));
}

void add_clock_columns(Record& row, const Measurement& m) {
  row.optional_metric("sm_clock_before_mhz", m.sm_clock_before_mhz)
      .optional_metric("sm_clock_after_mhz", m.sm_clock_after_mhz);
}

void add_measurement_extras(Record& row, const Measurement& m, bool measured) {
  if (!measured) return;
  row.extra()["samples_us"] = m.samples_us;
  row.extra()["measurement"] = measurement_json(m);
}

}  // namespace opbench
