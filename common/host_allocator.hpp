#pragma once
// The host allocator of a process that times MPI collectives. With glibc's defaults, a block
// above the mmap threshold (128 KiB, then raised as such blocks are freed, up to 32 MiB) is
// mapped for each malloc and unmapped at its free, and freed memory at the top of the heap above
// the trim threshold goes back to the kernel: a library that allocates a temporary buffer in
// every call — Open MPI's MPI_Reduce_scatter_block does, one as large as the call's input — then
// touches fresh pages every call, ~1,000 minor page faults a call at 4 MiB. The benchmark would
// time the kernel's page faults rather than the collective, unlike the steady state a
// long-running training process reaches, where freed memory is reused (PyTorch's caching
// allocator keeps its blocks).
#include <nlohmann/json.hpp>

namespace opbench {

// glibc's malloc keeps every page it gets: no block is served by a mapping of its own
// (M_MMAP_MAX 0: every size comes from the heap, where a freed block is reused) and the heap is
// never trimmed (M_TRIM_THRESHOLD -1). Setting either also turns off glibc's dynamic thresholds
// (mallopt(3)). Called first thing in bench_ccl and bench_fsdp, before MPI starts. Where mallopt
// refuses (another allocator, a sanitizer's), nothing changes, and the record says so.
void keep_host_pages();

// What environment.json says of the allocator ("host_allocator"): which of the two the process
// runs with, the settings, and why.
nlohmann::json host_allocator_record();

}  // namespace opbench
