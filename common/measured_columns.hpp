#pragma once
// The columns every measured row shares (docs/outputs.md: bench_gemm's, "as bench_gemm" in the
// others), written once: the time of one call and its spread over the samples, the GPU clock
// around them, and the JSON-only samples and measurement.
#include <cstdint>
#include <string>

#include "common/measure.hpp"
#include "common/record.hpp"

namespace opbench {

// An integer column that is empty when not positive; a text column empty when empty.
Value number_or_empty(std::int64_t v);
Value text_or_empty(const std::string& s);

// time_us, median_us, min_us, max_us, stddev_us, p99_us, cv, samples, rse: empty cells when the
// case was not measured (skipped, or failed before its first sample).
void add_time_columns(Record& row, const Measurement& m, bool measured);
// sm_clock_before_mhz, sm_clock_after_mhz (empty on the CPU).
void add_clock_columns(Record& row, const Measurement& m);
// The JSON lines' samples_us and measurement, when measured.
void add_measurement_extras(Record& row, const Measurement& m, bool measured);

}  // namespace opbench
