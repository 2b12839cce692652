// bench_memops: the memory-bound operators of a training step. See memops/bench_memops.cpp.
#include "common/main_guard.hpp"
#include "memops/bench_memops.hpp"

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, opbench::bench_memops_main);
}
