#pragma once
// The largest error of a comparison, NaN kept: std::max(worst, NaN) is `worst`, so a result that
// came out NaN everywhere would pass a bound on the largest error unseen. Once NaN, the worst
// stays NaN, and every `worst < bound` check fails.
#include <cmath>

inline double worse(double worst, double error) {
  if (std::isnan(worst)) return worst;
  return std::isnan(error) || error > worst ? error : worst;
}
