#pragma once
// The stop rule a unit test runs a real provider under: one warm-up call, then 3 to 5 samples
// within half a second. Enough to exercise the measurement and the check, not to time anything.
#include "common/measure.hpp"

namespace opbench::testing {

inline MeasureOptions quick_measure() {
  MeasureOptions m;
  m.warmup_iters = 1;
  m.warmup_time_s = 0;
  m.min_samples = 3;
  m.max_samples = 5;
  m.min_time_s = 0;
  m.max_time_s = 0.5;
  return m;
}

}  // namespace opbench::testing
