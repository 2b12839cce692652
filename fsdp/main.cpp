// bench_fsdp: the FSDP communication plan of a model, NCCL log comparison, and its replay under
// mpirun. See fsdp/bench_fsdp.cpp.
#include "common/main_guard.hpp"
#include "fsdp/bench_fsdp.hpp"

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, opbench::bench_fsdp_main);
}
