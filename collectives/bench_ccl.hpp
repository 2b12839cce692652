#pragma once

namespace opbench {

// The whole of bench_ccl (run under mpirun, or alone as world size 1). Returns the exit code.
int bench_ccl_main(int argc, char** argv);

}  // namespace opbench
