#pragma once
// The stop rule a unit test runs a real provider under: one warm-up call, then 3 to 5 samples
// within half a second. Enough to exercise the measurement and the check, not to time anything.
#include "common/measure.hpp"

namespace opbench::testing {

inline MeasureOptions quick_measure() {
  return {.warmup_iters = 1,
          .warmup_time_s = 0,
          .min_samples = 3,
          .max_samples = 5,
          .min_time_s = 0,
          .max_time_s = 0.5};
}

// A family's run options (GemmRunOptions, MemopRunOptions, ...) under the quick rule, with
// --check on: what a unit test of a real provider runs.
template <class RunOptions>
RunOptions quick_checked() {
  RunOptions o;
  o.measure = quick_measure();
  o.check = true;
  return o;
}

}  // namespace opbench::testing
