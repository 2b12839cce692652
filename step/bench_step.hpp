#pragma once

namespace opbench {

// The whole of bench_step: options, the step's operators, their times (measured or from
// reports), the composed step, reports. Returns the exit code.
int bench_step_main(int argc, char** argv);

}  // namespace opbench
