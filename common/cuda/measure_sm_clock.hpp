#pragma once
// measure() on a GPU stream with the SM clock read around the samples (C++20: kept apart from
// clock_probe.hpp, which nvcc compiles as C++17).
#include <cuda_runtime_api.h>

#include "common/measure.hpp"

namespace opbench {

// The SM clock is read on `stream` after the warm-up, just before the first sample, and just
// after the last, into the measurement's sm_clock_before_mhz and sm_clock_after_mhz.
Measurement measure_with_sm_clock(cudaStream_t stream, const MeasureOptions& options,
                                  const std::function<double()>& sample,
                                  const std::function<void()>& prepare);

}  // namespace opbench
