#pragma once

namespace opbench {

// The whole of bench_memops: options, cases, providers, measurement, reports. Returns the exit
// code.
int bench_memops_main(int argc, char** argv);

}  // namespace opbench
