#pragma once
// One memory-bound case run through its provider, for bench_memops and bench_step alike.
#include <string>

#include "common/record.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {

// Under the stop rule: skipped when the provider cannot run it, failed when it throws or its
// check fails; the note carries the case's own, the provider's and the noise verdict.
MemopResult run_memop_case(MemopProvider& provider, const MemopCase& c, const MemopRunOptions& run);

// "label  12.3 ms  187 GB/s (85% of the roof)", or the status and note.
std::string memop_progress_line(const std::string& label, const Record& row, const MemopResult& r);

}  // namespace opbench
