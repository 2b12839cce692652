#pragma once

namespace opbench {

// The whole of bench_gemm: options, cases, provider, measurement, reports. Returns the exit code.
int bench_gemm_main(int argc, char** argv);

}  // namespace opbench
