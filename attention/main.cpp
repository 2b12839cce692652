// bench_attention: fused attention forward and backward (cuDNN SDPA, or CPU). See
// attention/bench_attention.cpp.
#include "attention/bench_attention.hpp"
#include "common/main_guard.hpp"

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, opbench::bench_attention_main);
}
