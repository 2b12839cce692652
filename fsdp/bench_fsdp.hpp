#pragma once

namespace opbench {

// The whole of bench_fsdp (plan, log comparison, or a replay under mpirun). Returns the exit code.
int bench_fsdp_main(int argc, char** argv);

}  // namespace opbench
