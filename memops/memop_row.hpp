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
struct BandwidthRoof {
  std::optional<double> gbps;
  std::string source;     // "hardware.json", "--peak-bw", "best loop: update", "" when unknown
  bool measured = false;  // the CPU's own loops: an operator above it is shown at 100%, noted
};

Record memop_row(const MemopCase& c, const MemopProvider& provider, const MemopResult& r,
                 const BandwidthRoof& roof);

}  // namespace opbench
