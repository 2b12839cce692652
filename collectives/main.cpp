// bench_ccl: collectives with nccl-tests semantics, NCCL or MPI, under mpirun. See
// collectives/bench_ccl.cpp.
#include "collectives/bench_ccl.hpp"
#include "common/main_guard.hpp"

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, opbench::bench_ccl_main);
}
