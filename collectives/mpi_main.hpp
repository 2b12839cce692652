#pragma once
// main() of a binary that runs as an MPI job (bench_ccl, bench_fsdp), with opbench's error rules
// made safe for many ranks: help is printed once; bad input — which every rank sees alike — is
// reported by rank 0 and all ranks wait for that line before exiting 2 (mpirun stops the job as
// soon as one rank exits with an error, which could cut the line off); a failure on one rank is
// reported by that rank, which then takes the job down so no other rank waits forever.
// Before MPI starts, the process's allocator is made to keep its pages
// (common/host_allocator.hpp), so that no collective is timed with page faults of its own.
#include <functional>
#include <optional>

#include "collectives/mpi_session.hpp"

namespace opbench {

// `body` parses the options (returning 0 after --help) and runs; it may throw opbench::Error.
int run_mpi_main(int argc, char** argv, const std::function<int(MpiSession&, int, char**)>& body);

// The body of bench_ccl and bench_fsdp: `parse` the options (nullopt after --help), then `run`.
template <typename Options>
int run_mpi_main(int argc, char** argv, std::optional<Options> (*parse)(int, char**),
                 int (*run)(MpiSession&, const Options&, int, char**)) {
  return run_mpi_main(argc, argv, [parse, run](MpiSession& session, int argc, char** argv) {
    auto options = parse(argc, argv);
    return options ? run(session, *options, argc, argv) : 0;
  });
}

}  // namespace opbench
