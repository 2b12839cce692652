#pragma once
// A memops case and its result as one report row (CSV columns as docs/outputs.md lists them).
#include <optional>
#include <string>

#include "common/record.hpp"
#include "memops/memop.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {

// The bandwidth pct_peak_bw is taken against: the GPU's peak from configs/hardware.json,
// --peak-bw, or on the CPU the triad this run measured.
// Beside it, the rate at which the same run copies device memory (pct_of_copy): what the device
// reaches in practice, where the datasheet's peak is what it never quite does.
struct BandwidthRoof {
  std::optional<double> gbps;
  std::string source;     // "hardware.json", "--peak-bw", "best loop: update", "" when unknown
  bool measured = false;  // the CPU's own loops: an operator above it is shown at 100%, noted
  std::optional<double> copy_gbps;  // the run's copy rate, bytes read and written per second
  std::string copy_source;          // "the roof's copy loop", "copy of 268435456 bf16 elements"
};

// Whether a run of a case has samples to make its figures from (not skipped, timed at least once).
bool memop_measured(const MemopResult& r);

// Whether a case's bandwidth is read against the device's memory (every operator and the device
// copy); copies over a link (host <-> device, peer) are not.
bool against_device_memory(const MemopCase& c);

// `copy_same_bytes_gbps`: the rate of a device copy of the row's own bytes (bench_memops's
// SameBytesCopies), for the rows too small for the run's copy rate to be their ceiling.
Record memop_row(const MemopCase& c, const MemopProvider& provider, const MemopResult& r,
                 const BandwidthRoof& roof,
                 std::optional<double> copy_same_bytes_gbps = std::nullopt);

}  // namespace opbench
