#pragma once
// Models of the GPU's ex2.approx.ftz.f32 and rcp.approx.ftz.f32 at their documented worst (PTX
// ISA: ex2 within 2 ulp of the correctly rounded 2^a, rcp within 1 ulp; .ftz flushes a result
// below 2^-126 to 0), for the host tests of the formulas our CUDA kernels compute with them
// (memops/fast_math.hpp).
#include <cmath>
#include <cstdlib>

namespace opbench::testing {

// `ulps` ulps up (positive) or down from r, a positive normal float.
inline float step_ulps(float r, int ulps) {
  for (int i = 0; i < std::abs(ulps); ++i)
    r = std::nextafter(r, ulps > 0 ? INFINITY : 0.0f);
  return r;
}

// ex2.approx.ftz.f32 and rcp.approx.ftz.f32 at their worst, Ex2 and Rcp ulps off.
template <int Ex2, int Rcp>
struct Model {
  static float ex2(float a) {
    if (std::isnan(a)) return a;
    const float r = static_cast<float>(std::exp2(static_cast<double>(a)));
    if (r < 0x1p-126f) return 0.0f;  // .ftz: a subnormal result is flushed
    if (std::isinf(r)) return r;
    return step_ulps(r, Ex2);
  }
  static float rcp(float a) {
    if (std::isinf(a)) return 0.0f;
    const float r = static_cast<float>(1.0 / static_cast<double>(a));
    return step_ulps(r, Rcp);
  }
};

// body(Model<...>{}) for each of the four worst cases.
template <class Body>
void for_each_model(Body&& body) {
  body(Model<2, 1>{});
  body(Model<2, -1>{});
  body(Model<-2, 1>{});
  body(Model<-2, -1>{});
}

}  // namespace opbench::testing
