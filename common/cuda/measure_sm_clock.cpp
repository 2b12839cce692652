#include "common/cuda/measure_sm_clock.hpp"

#include "common/cuda/clock_probe.hpp"

namespace opbench {

Measurement measure_with_sm_clock(cudaStream_t stream, const MeasureOptions& options,
                                  const std::function<double()>& sample,
                                  const std::function<void()>& prepare) {
  const double before = probe_sm_clock_mhz(stream);
  Measurement m = measure(options, sample, prepare);
  m.sm_clock_before_mhz = before;
  m.sm_clock_after_mhz = probe_sm_clock_mhz(stream);
  return m;
}

}  // namespace opbench
