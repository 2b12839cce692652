#include "common/cuda/measure_sm_clock.hpp"

#include "common/cuda/clock_probe.hpp"

namespace opbench {

Measurement measure_with_sm_clock(cudaStream_t stream, const MeasureOptions& options,
                                  const std::function<double()>& sample,
                                  const std::function<void()>& prepare) {
  // Read after the warm-up (which ramps the clock up) and after the last sample, so the readings
  // describe the measured region only, as nvbench reads its clocks around the measured work.
  double before = 0, after = 0;
  Measurement m = measure(options, sample, prepare, {}, [&](bool starting) {
    (starting ? before : after) = probe_sm_clock_mhz(stream);
  });
  m.sm_clock_before_mhz = before;
  m.sm_clock_after_mhz = after;
  return m;
}

}  // namespace opbench
