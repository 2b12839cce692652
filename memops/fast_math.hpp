#pragma once
// The GPU's fast exp and reciprocal, as our CUDA kernels use them (the activations' sigmoid,
// softmax's and cross-entropy's exponentials), written once over a pair of primitives P (P::ex2,
// P::rcp): the kernels instantiate them with the hardware's instructions (Hardware below), the
// host tests (tests/unit/test_fast_math.cpp) with models of those instructions' documented worst
// errors, and compare them with the exact functions within the bounds derived here. The CPU loops
// keep memop_math's exp_approx (within 2 ulp over its whole range) and an IEEE division; the fp64
// reference is exact. Why: memop_math's exp_approx is about 20 instructions and the IEEE division
// about 10 more; with a software bf16 encode that made silu, swiglu and gelu compute-bound on an
// H200 (50 to 65% of the memory roof, issue 41), where one MUFU.EX2 and one MUFU.RCP do.
//
// What the hardware promises (PTX ISA 9.1, "Floating Point Instructions: ex2" and "rcp"):
//   ex2.approx.ftz.f32 d, a: 2^a within 2 ulp of the correctly rounded result over the full
//     range; -inf gives +0, +inf +inf, NaN NaN; .ftz flushes subnormal inputs and results to
//     zero (a result below 2^-126 is 0).
//   rcp.approx.ftz.f32 d, a: 1/a within 1 ulp over the full range; +-inf gives +-0, +-0 +-inf.
// An ulp of a float is at most 2u of it (u = 2^-24, fp32's unit roundoff): ex2 is within
// 2.5 ulp = 5u of the exact 2^a (2 ulp from the correctly rounded value, which is within half an
// ulp), rcp within 2u of the exact 1/a.
//
// e^x as 2^(x log2 e): the product rounds once (and log2 e to float is 0.23u off), so the argument
// carries an error of 1.23u |x log2 e| and e^x one of 1.23u |x| (d 2^t / 2^t = ln 2 dt): unlike
// exp_approx's Cody-Waite reduction, the error grows with |x|. Where it is used that growth is
// harmless:
//   sigmoid(z) = 1 / (1 + e), e = e^-z: with e's relative error r_e <= (1.23 |z| + 5)u, the
//     addition's u and rcp's 2u, s = sigmoid(z) comes out within s (1 - s) r_e + 3u s, and
//     s (1 - s) |z| <= 0.224 (at |z| = 2.40), s (1 - s) <= 1/4: |ds| <= (1.53 + 3s)u whatever z.
//     1 - s (FastSigmoid: e s where e <= 1, i.e. z >= 0) is within (1 - s)(r_e + r_s + u), r_s
//     the relative error of s; where e > 1 it is 1 - s computed, within |ds| + u(1 - s).
//   Against memop_math::ExpApprox (exp_approx within 4u, an IEEE division within u, 1 - s by
//     subtraction): |ds| <= (1 + 2s)u. memops/memop_check.hpp's activation tolerance takes both,
//     carried to the outputs by tests/unit/test_fast_math.cpp.
//   softmax's e^(x - max) as 2^((x - max) log2 e) (exp_shifted): the difference rounds once (not
//     at all for bf16 inputs), the product once, and log2 e's 0.23u, so a term of e^(x - max) <= 1
//     is within 2.23u |x - max| + 5u, an element's error relative to the largest (e^0 = 1 exactly)
//     at most 5u + 2.23u/e (|d| e^-|d| <= 1/e), and the sum's at most 5u + 2.23u max |x - max| (a
//     weighted mean of the terms' errors). memop_check.hpp's fast-exp allowance takes it for the
//     benchmark's inputs.
#include <math.h>

#include "common/host_device.hpp"
#include "memops/memop_math.hpp"

namespace opbench::fast_math {

inline constexpr float kLog2e = 1.44269504088896341f;

#if defined(__CUDACC__)
// The hardware's instructions, by inline PTX so that nothing else (no -use_fast_math, no library
// wrapper's range scaling) decides what is emitted: one MUFU.EX2 and one MUFU.RCP.
struct Hardware {
  __device__ __forceinline__ static float ex2(float a) {
    float d;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(a));
    return d;
  }
  __device__ __forceinline__ static float rcp(float a) {
    float d;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(a));
    return d;
  }
};
#endif

// sigmoid(z) and 1 - sigmoid(z) with P's ex2 and rcp: e = 2^(-z log2 e), s = rcp(1 + e). A z
// below about -88 overflows e to inf, and rcp(inf) = 0 = sigmoid's limit; a z above 87.3 gives
// e = 0 (flushed), s = 1. 1 - s is e s where e <= 1 (s >= 1/2), without the cancellation of
// 1 - s near 1, which would turn rcp's error in s into an error of s's size in 1 - s (gelu's
// gradient at x = 4 takes 2 x s (1 - s) with 1 - s ~ 2e-5: 20 times s's error); and 1 - s
// itself where e > 1 (s < 1/2: no cancellation, and no inf x 0 when e overflows). Two more
// instructions an element than the CPU's 1 - s, which the GPU's issue rate does not notice.
template <class P>
struct FastSigmoid {
  OPBENCH_HD_TEMPLATE
  OPBENCH_HD static memop_math::Sigmoid sigmoid(float z) {
    const float e = P::ex2(z * -kLog2e);
    const float s = P::rcp(1.0f + e);
    return {s, memop_math::select(e <= 1.0f, e * s, 1.0f - s)};
  }
};

// The origin a row's (or a part's) terms e^(x - origin) are taken against: its max, or 0 while
// the max is -inf (a part of nothing but masked logits adds terms of 2^-inf = 0 then, not NaN; a
// row of nothing but -inf gets a sum of 0 and softmax 0 x (1/0) = NaN in every element, as
// torch.softmax gives).
OPBENCH_HD inline float exp_origin(float max) {
  return max == -INFINITY ? 0.0f : max;
}

// e^(x - origin) as 2^((x - origin) log2 e), origin = exp_origin(max): an FADD, an FMUL and a
// MUFU.EX2 an element. The difference first, so that the largest element's term is 2^0 = 1
// however large the logits: the one-FMA form 2^(x log2 e - max log2 e) carried the rounding of
// max log2 e (up to half its ulp: 18 at max = 1e9, 440 at 1e10) into every term's exponent,
// which over- or underflowed past about 1.5e9 (a NaN row), and which a split row's chunks,
// each against its own max, did not share (their merge rescales by the exact difference of the
// maxes). -inf gives 0.
OPBENCH_HD_TEMPLATE
template <class P>
OPBENCH_HD inline float exp_shifted(float x, float origin) {
  return P::ex2((x - origin) * kLog2e);
}

// 2^((from - to) log2 e) = e^(from - to), the rescaling of a part's sum to a larger max; 1 when
// they are equal (-inf included: no -inf - -inf).
OPBENCH_HD_TEMPLATE
template <class P>
OPBENCH_HD inline float rescale(float from, float to) {
  return from == to ? 1.0f : P::ex2((from - to) * kLog2e);
}

}  // namespace opbench::fast_math
