// bench_step: a training step projected from its operators' times. See step/bench_step.cpp.
#include "common/main_guard.hpp"
#include "step/bench_step.hpp"

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, opbench::bench_step_main);
}
