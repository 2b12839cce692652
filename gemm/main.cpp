// bench_gemm: GEMM throughput on cuBLASLt (GPU) or OpenBLAS (CPU). See gemm/bench_gemm.cpp.
#include "common/main_guard.hpp"
#include "gemm/bench_gemm.hpp"

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, opbench::bench_gemm_main);
}
