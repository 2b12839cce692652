#pragma once
// The per-element and per-row arithmetic of the memory-bound operators (memops/memop.hpp), in
// fp32. The CPU loops (memops/cpu_memops.cpp) and the CUDA kernels call these same OPBENCH_HD
// functions, so a host test runs the very arithmetic a kernel runs. Compiled by nvcc as C++17:
// no host-only std:: calls, only the global ::sqrtf, ::powf, ::cosf, ... that CUDA also provides.
//
// The element functions are branch-free (selects, not ifs) and call no libm function: a branch or
// a call into libm keeps GCC from vectorising the loop around them (GCC vectorises libm's expf
// only under -ffast-math and sqrtf only under -fno-math-errno, neither of which opbench builds
// with). Hence exp_approx and sqrt_approx below, written out in plain arithmetic, within 2 ulp.
// The per-row functions (a norm's rstd, a row's log-sum-exp) run once per row and use libm.
#include <math.h>

#include <cstdint>
#include <cstring>

#include "common/host_device.hpp"

namespace opbench::memop_math {

// The operators' constants, the values the models' training code uses.
inline constexpr float kRmsNormEps = 1e-6f;           // Llama's rms_norm_eps (1e-5 in some configs)
inline constexpr float kLayerNormEps = 1e-5f;         // torch.nn.LayerNorm's default
inline constexpr float kRopeBase = 10000.0f;          // rope_theta of Llama 2 and most models
inline constexpr float kFp8E4m3Max = 448.0f;          // the largest finite e4m3 ("fn") value
inline constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
inline constexpr float kGeluC = 0.044715f;

// ---- bits ----------------------------------------------------------------------------------

OPBENCH_HD inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);  // GCC turns this into a register move; it vectorises
  return u;
#endif
}

OPBENCH_HD inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// a + b rounded once: nvcc would otherwise be free to contract a preceding product into an FMA,
// which rounds differently from the host at ties; the rounding tricks below rely on this add.
OPBENCH_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// c ? a : b without a branch. GCC keeps a float `c ? a : b` as a branch when an arm is a
// constant it can fold into the code that follows (it duplicates that code per arm), and a
// branch stops the loop's vectorisation; masks it leaves alone.
OPBENCH_HD inline std::uint32_t select_bits(bool c, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

OPBENCH_HD inline float select(bool c, float a, float b) {
  return bits_float(select_bits(c, float_bits(a), float_bits(b)));
}

// ---- exp and sqrt, vectorisable ----------------------------------------------------------------

// e^x within 2 ulp for x in [ln 2^-126, 88] = [-87.34, 88]. Outside, x is clamped: e^-87.34 =
// 2^-126, the smallest normal float, stands in for the underflow (exp_or_zero gives 0 there) and
// e^88 ~ 1.7e38 for the overflow to infinity, harmless where it is used (sigmoid's
// 1 / (1 + e^-x)). NaN stays NaN.
// x = n ln2 + r with n an integer and |r| <= ln2/2, then e^x = 2^n e^r: e^r by its Taylor
// polynomial of degree 7 (the remainder, |r|^8/8! e^|r| < 7.2e-9, is under 0.13 ulp) and 2^n
// written straight into the exponent field.
inline constexpr float kExpUnderflow = -87.33654475f;  // ln(2^-126), rounded to float
OPBENCH_HD inline float exp_approx(float x) {
  x = select(x < kExpUnderflow, kExpUnderflow, x);  // NaN fails both tests and stays NaN
  x = select(x > 88.0f, 88.0f, x);
  // Adding and subtracting 1.5 * 2^23 rounds to an integer (to nearest, ties to even): no
  // rintf, which needs SSE4.1 to vectorise.
  constexpr float kRound = 12582912.0f;
  const float n = add_rn(x * 1.44269504088896341f, kRound) - kRound;
  // ln2 in two parts (Cody and Waite): n * 0.693145751953125 is exact for |n| < 2^9, so r keeps
  // its low bits; the second part adds the rest of ln2.
  float r = x - n * 0.693145751953125f;
  r = r - n * 1.4286068202862268e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // n is in [-126, 127] after the clamps: a normal exponent field from 1 to 254. A NaN x leaves n
  // NaN, whose conversion to int is undefined: 0 stands in (p is NaN, and so is the result).
  const float whole_n = select(n == n, n, 0.0f);
  const std::uint32_t two_n = static_cast<std::uint32_t>(static_cast<int>(whole_n) + 127) << 23;
  return p * bits_float(two_n);
}

// e^x as exp_approx, but 0 below ln 2^-126, as a flush-to-zero exp gives (-inf included): what
// softmax and cross-entropy take, since a masked logit's (-inf) probability is exactly 0 in
// torch.softmax, not e^-87.
OPBENCH_HD inline float exp_or_zero(float x) {
  return select(x < kExpUnderflow, 0.0f, exp_approx(x));
}

// 1/sqrt(x) within 2 ulp for normal x >= 2^-126 (0 gives a large finite value, so that
// sqrt_approx(0) = 0): the classic bit-level first guess, then three Newton steps, each of which
// squares the relative error (3.4e-2, 1.8e-3, 4.6e-6, then rounding only).
OPBENCH_HD inline float rsqrt_approx(float x) {
  float y = bits_float(0x5F375A86u - (float_bits(x) >> 1));
  const float half = 0.5f * x;
  y = y * (1.5f - half * y * y);
  y = y * (1.5f - half * y * y);
  y = y * (1.5f - half * y * y);
  return y;
}

// sqrt(x) within 2 ulp for normal x >= 0, and 0 for 0. Subnormal x (below 1.2e-38) comes out
// too small by up to 2x: where it is used (AdamW's denominator, sqrt(v) + eps with eps = 1e-8)
// that is invisible.
OPBENCH_HD inline float sqrt_approx(float x) {
  return x * rsqrt_approx(x);
}

// ---- activations ---------------------------------------------------------------------------

// sigmoid(z) and 1 - sigmoid(z) = sigmoid(-z).
struct Sigmoid {
  float s, one_minus;
};

// The sigmoid of the CPU loops: exp_approx and an IEEE division, 1 - s by subtraction. Our CUDA
// kernels take fast_math::FastSigmoid (the hardware's ex2 and rcp) instead; the activations below
// take either as M.
struct ExpApprox {
  OPBENCH_HD static Sigmoid sigmoid(float z) {
    const float s = 1.0f / (1.0f + exp_approx(-z));
    return {s, 1.0f - s};
  }
};

OPBENCH_HD inline float sigmoid(float x) {
  return ExpApprox::sigmoid(x).s;
}

// silu(g) = g sigmoid(g), as torch.nn.functional.silu.
template <class M = ExpApprox>
OPBENCH_HD inline float silu(float g) {
  return g * M::sigmoid(g).s;
}

// silu'(g) = s (1 + g (1 - s)), s = sigmoid(g): torch's silu_backward.
template <class M = ExpApprox>
OPBENCH_HD inline float silu_grad(float g) {
  const Sigmoid s = M::sigmoid(g);
  return s.s * (1.0f + g * s.one_minus);
}

// GELU, tanh approximation (torch's approximate='tanh'): 0.5 x (1 + tanh(a)),
// a = sqrt(2/pi) (x + 0.044715 x^3). Since 0.5 (1 + tanh(a)) = sigmoid(2a) exactly, this is
// x sigmoid(2a): one exp, no tanh (whose libm call would not vectorise), and no cancellation in
// 1 + tanh(a) for large negative x.
template <class M = ExpApprox>
OPBENCH_HD inline float gelu(float x) {
  const float a = kGeluK * (x + kGeluC * x * x * x);
  return x * M::sigmoid(2.0f * a).s;
}

// d gelu/dx = 0.5 (1 + tanh a) + 0.5 x (1 - tanh^2 a) a'(x) with a' = sqrt(2/pi) (1 + 3 0.044715
// x^2) (torch's GeluBackward for 'tanh'); with s = sigmoid(2a), 0.5 (1 + tanh a) = s and
// 1 - tanh^2 a = 4 s (1 - s).
template <class M = ExpApprox>
OPBENCH_HD inline float gelu_grad(float x) {
  const float x2 = x * x;
  const float a = kGeluK * (x + kGeluC * x2 * x);
  const Sigmoid s = M::sigmoid(2.0f * a);
  return s.s + 2.0f * x * s.s * s.one_minus * kGeluK * (1.0f + 3.0f * kGeluC * x2);
}

// ---- rotary embedding ------------------------------------------------------------------------

// The frequency of pair i of a head of head_dim (pairs i and i + head_dim/2, NeoX style), as
// Hugging Face's Llama computes it, in fp32: inv_freq = 1 / base^(2i / head_dim).
OPBENCH_HD inline float rope_inv_freq(std::int64_t i, std::int64_t head_dim) {
  return 1.0f / ::powf(kRopeBase, static_cast<float>(2 * i) / static_cast<float>(head_dim));
}

// The angle of pair i at `position`: position x inv_freq, one fp32 product as HF's table is
// (so the table matches what the model trained with, rounding included: at position p the
// angle carries an error of about p ulp(1), which is HF's, not ours).
OPBENCH_HD inline float rope_angle(std::int64_t position, std::int64_t i, std::int64_t head_dim) {
  return static_cast<float>(position) * rope_inv_freq(i, head_dim);
}

struct RopePair {
  float lo, hi;  // elements i and i + head_dim/2
};

// Rotation of the pair (x[i], x[i + d/2]) by the angle of cos c and sin s: HF's
// x cos + rotate_half(x) sin, rotate_half(x) = (-x[d/2:], x[:d/2]).
OPBENCH_HD inline RopePair rope_rotate(float lo, float hi, float c, float s) {
  return {lo * c - hi * s, hi * c + lo * s};
}

// The backward: the transpose of a rotation by theta is the rotation by -theta.
OPBENCH_HD inline RopePair rope_rotate_back(float lo, float hi, float c, float s) {
  return {lo * c + hi * s, hi * c - lo * s};
}

// ---- AdamW ---------------------------------------------------------------------------------

// torch.optim.AdamW's hyper-parameters (its defaults here) and the step being taken (from 1).
struct AdamWParams {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
  std::int64_t step = 1;
};

// What one step needs per element, computed once per step (on the host, for a kernel).
struct AdamWStep {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float decay;         // 1 - lr weight_decay: decoupled weight decay
  float step_size;     // lr / (1 - beta1^step): the first moment's bias correction
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^step): the second moment's
  float eps;
};

// In double: 1 - beta2^step cancels (0.999^10 = 0.990), so fp32 powers would lose digits.
OPBENCH_HD inline AdamWStep adamw_step(const AdamWParams& p) {
  const double bc1 = 1.0 - ::pow(static_cast<double>(p.beta1), static_cast<double>(p.step));
  const double bc2 = 1.0 - ::pow(static_cast<double>(p.beta2), static_cast<double>(p.step));
  AdamWStep s;
  s.beta1 = p.beta1;
  s.one_minus_beta1 = static_cast<float>(1.0 - static_cast<double>(p.beta1));
  s.beta2 = p.beta2;
  s.one_minus_beta2 = static_cast<float>(1.0 - static_cast<double>(p.beta2));
  s.decay = static_cast<float>(1.0 - static_cast<double>(p.lr) * p.weight_decay);
  s.step_size = static_cast<float>(p.lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / ::sqrt(bc2));
  s.eps = p.eps;
  return s;
}

struct AdamWState {
  float param, m, v;
};

// One element, in torch.optim.AdamW's order: decay the parameter (p *= 1 - lr wd), update the
// moments, then p -= step_size m / (sqrt(v) / sqrt(bc2) + eps).
OPBENCH_HD inline AdamWState adamw_update(AdamWState x, float grad, const AdamWStep& s) {
  x.m = s.beta1 * x.m + s.one_minus_beta1 * grad;
  x.v = s.beta2 * x.v + s.one_minus_beta2 * grad * grad;
  const float denom = sqrt_approx(x.v) * s.inv_sqrt_bc2 + s.eps;
  x.param = x.param * s.decay - s.step_size * x.m / denom;
  return x;
}

// ---- normalisation statistics --------------------------------------------------------------

// RMSNorm: 1 / sqrt(mean(x^2) + eps) from the row's sum of squares.
OPBENCH_HD inline float rms_rstd(float sum_of_squares, std::int64_t n, float eps) {
  return 1.0f / ::sqrtf(sum_of_squares / static_cast<float>(n) + eps);
}

// Fused residual add + RMSNorm (TransformerEngine, Apex and Liger fuse them in a Llama block):
// h = x + r continues the residual stream (it is written out too) and is normalised,
// y = (h rstd) w with rstd = rms_rstd of the row's sum of h^2. The norm reads h as computed in
// fp32, not as rounded to the stored dtype.
OPBENCH_HD inline float residual_add(float x, float r) {
  return x + r;
}
// (h rstd) w: Hugging Face's order, as rmsnorm's.
OPBENCH_HD inline float rms_scale(float h, float rstd, float w) {
  return h * rstd * w;
}

// RMSNorm's backward, y = x rstd w: with c = rstd^2 mean(dy w x) (rms_bwd_c, from the row's
// dot product sum dy w x and 1/cols), dx = rstd (dy w - x c), and the row's term of dw is
// dy x rstd.
OPBENCH_HD inline float rms_bwd_c(float rstd, float dot, float inv_cols) {
  return rstd * rstd * dot * inv_cols;
}
OPBENCH_HD inline float rms_bwd_dx(float dy, float x, float w, float rstd, float c) {
  return rstd * (dy * w - x * c);
}
OPBENCH_HD inline float rms_bwd_dw(float dy, float x, float rstd) {
  return dy * x * rstd;
}

struct RowStats {
  float mean, rstd;
};

// LayerNorm from two passes over the row: `sum` of x gives the mean, then `centred_squares`,
// the sum of (x - mean)^2, the biased variance (LayerNorm divides by n). Two passes cost no
// memory traffic (the row is in cache) and avoid the cancellation of E[x^2] - E[x]^2.
OPBENCH_HD inline float row_mean(float sum, std::int64_t n) {
  return sum / static_cast<float>(n);
}
OPBENCH_HD inline float layernorm_rstd(float centred_squares, std::int64_t n, float eps) {
  return 1.0f / ::sqrtf(centred_squares / static_cast<float>(n) + eps);
}

// LayerNorm's backward, y = xhat w + b with xhat = (x - mean) rstd: with g = dy w and the row's
// means mean_g = mean(g) and mean_gx = mean(g xhat), dx = rstd (g - mean_g - xhat mean_gx), and
// the row's terms of dw and db are dy xhat and dy.
OPBENCH_HD inline float layernorm_xhat(float x, float mean, float rstd) {
  return (x - mean) * rstd;
}
OPBENCH_HD inline float layernorm_bwd_dx(float dy, float w, float xhat, float rstd, float mean_g,
                                         float mean_gx) {
  return rstd * (dy * w - mean_g - xhat * mean_gx);
}

// Welford's one-pass mean and variance, for a kernel that sees the row once (a thread's share,
// then merged across threads): stable where the sums of x and x^2 are not.
struct Welford {
  float count = 0, mean = 0, m2 = 0;  // m2: the sum of squared deviations from the mean
};

OPBENCH_HD inline Welford welford_push(Welford w, float x) {
  w.count += 1.0f;
  const float d = x - w.mean;
  w.mean += d / w.count;
  w.m2 += d * (x - w.mean);
  return w;
}

// Chan et al.'s merge of two partial results.
OPBENCH_HD inline Welford welford_merge(Welford a, Welford b) {
  const float n = a.count + b.count;
  if (n == 0.0f) return a;
  const float d = b.mean - a.mean;
  const float fb = b.count / n;
  Welford out;
  out.count = n;
  out.mean = a.mean + d * fb;
  out.m2 = a.m2 + b.m2 + d * d * a.count * fb;
  return out;
}

OPBENCH_HD inline RowStats welford_stats(Welford w, float eps) {
  return {w.mean, 1.0f / ::sqrtf(w.m2 / w.count + eps)};
}

// ---- number formats ------------------------------------------------------------------------

// fp32 -> bf16, round to nearest, ties to even: add just under half of the dropped 16 bits, plus
// one more when the kept part is odd, and truncate. A carry may run into the exponent (correctly:
// the next binade, or infinity past the largest bf16). NaN is not rounded (the carry could turn
// it into infinity): it keeps its sign and top payload bits, with the quiet bit set. The choice
// is made on the 32-bit words and narrowed once (on SSE2 each narrowing costs shuffles).
OPBENCH_HD inline std::uint16_t bf16_encode(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(select_bits(x != x, u | 0x00400000u, rounded) >> 16);
}

// bf16 is the top half of an fp32: exact.
OPBENCH_HD inline float bf16_decode(std::uint16_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

// fp32 -> fp8 e4m3 (OCP "fn": bias 7, no infinities, S.1111.111 is NaN, largest 448), round to
// nearest even, saturating: |x| beyond 448 becomes 448, as Transformer Engine's casts do
// (delayed scaling can overshoot when the amax grows between steps). NaN gives NaN.
OPBENCH_HD inline std::uint8_t fp8_e4m3_encode(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  float a = bits_float(u & 0x7FFFFFFFu);
  a = select(a < kFp8E4m3Max, a, kFp8E4m3Max);  // NaN too, replaced below
  // Normal e4m3 (|x| >= 2^-6): round fp32's 23-bit mantissa to 3 bits as bf16_encode does, then
  // rebias the exponent from 127 to 7: the code is (exponent << 3 | mantissa) - (120 << 3).
  // Nothing below 448 rounds past it.
  const std::uint32_t b = float_bits(a);
  const std::uint32_t normal = ((b + 0x7FFFFu + ((b >> 20) & 1u)) >> 20) - (120u << 3);
  // Subnormal e4m3 (|x| < 2^-6) are the multiples of 2^-9 and their code is that multiple (8 is
  // 2^-6, the smallest normal, whose code is also 8). 2^14's ulp is 2^-9, so a + 2^14 rounds a to
  // that grid, ties to even, and the low bits of the sum are the multiple.
  const std::uint32_t sub = float_bits(add_rn(a, 16384.0f)) - 0x46800000u;
  std::uint32_t code = select_bits(a < 0.015625f, sub, normal);
  code = select_bits(x != x, 0x7Fu, code);
  return static_cast<std::uint8_t>(code | sign);
}

}  // namespace opbench::memop_math
