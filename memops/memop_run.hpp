#pragma once
// One memory-bound case run through its provider, for bench_memops and bench_step alike.
#include <memory>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/record.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {

// The providers of a run on `backend`: those `names` lists (comma-separated; empty: every one
// of the backend, memop_run.cpp's table). The first runs every case; the others (cuDNN's norms
// beside our kernels) run the cases they support, each a row of its own.
std::vector<std::unique_ptr<MemopProvider>> make_memop_providers(Backend backend,
                                                                 const std::string& names,
                                                                 int device);

// One provider of `backend`: `name`, or the backend's first (our kernels, not cuDNN's norms).
std::unique_ptr<MemopProvider> make_memop_provider(Backend backend, const std::string& name,
                                                   int device);

// Under the stop rule: skipped when the provider cannot run it, failed when it throws or its
// check fails; the note carries the case's own, the provider's and the noise verdict.
MemopResult run_memop_case(MemopProvider& provider, const MemopCase& c, const MemopRunOptions& run);

// "label  12.3 ms  187 GB/s (85% of the roof)", or the status and note.
std::string memop_progress_line(const std::string& label, const Record& row, const MemopResult& r);

}  // namespace opbench
