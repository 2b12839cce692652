// bench_ccl: collectives with nccl-tests semantics, NCCL or MPI, under mpirun. See
// collectives/bench_ccl.cpp.
#include "collectives/bench_ccl.hpp"
#include "collectives/mpi_session.hpp"
#include "common/main_guard.hpp"

int main(int argc, char** argv) {
  // Every rank reads the same flags; only the first reports what is wrong with them.
  return opbench::run_guarded(argc, argv, opbench::bench_ccl_main, opbench::launcher_rank() == 0);
}
