// The memory-bound operators' arithmetic on values checked by hand (memops/memop_math.hpp, the
// CPU loops and the fp64 reference), then the CPU provider measuring and checking a small case of
// every operator it runs, and the triad.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/dtype.hpp"
#include "memops/cpu_memops.hpp"
#include "memops/elementwise.hpp"
#include "memops/memop_check.hpp"
#include "memops/memop_math.hpp"
#include "memops/memop_provider.hpp"
#include "memops/memop_run.hpp"
#include "memops/reference_memops.hpp"
#include "tests/unit/memop_case.hpp"
#include "tests/unit/quick_measure.hpp"
#include "tests/unit/worst_error.hpp"

using namespace opbench;
namespace mm = opbench::memop_math;
namespace cm = opbench::cpu_memops;
namespace ref = opbench::reference_memops;

TEST_CASE("memops by hand: rmsnorm of [3, 4] with w = 1") {
  // mean(x^2) = (9 + 16) / 2 = 12.5, so rstd = 1/sqrt(12.5) and y = x / sqrt(12.5).
  CHECK(mm::rms_rstd(25.0f, 2, 0.0f) == Approx(1.0 / std::sqrt(12.5)).epsilon(1e-7));
  const std::vector<float> x{3, 4}, w{1, 1};
  std::vector<float> y(2), rstd(1);
  cm::rmsnorm_fwd(x.data(), w.data(), y.data(), rstd.data(), 1, 2);
  CHECK(rstd[0] == Approx(0.28284271).epsilon(1e-6));  // eps = 1e-6 next to 12.5 is invisible
  CHECK(y[0] == Approx(0.84852814).epsilon(1e-6));
  CHECK(y[1] == Approx(1.13137085).epsilon(1e-6));
  std::vector<double> yr(2), rr(1);
  ref::rmsnorm_fwd(x.data(), w.data(), 1, 2, 0.0, yr.data(), rr.data());
  CHECK(rr[0] == Approx(0.282842712474619).epsilon(1e-12));
  CHECK(yr[1] == Approx(1.131370849898476).epsilon(1e-12));
}

TEST_CASE("memops by hand: the residual add fused before rmsnorm is rmsnorm of the sum") {
  // [1, 2] + [2, 2] = [3, 4], the row above: rstd = 1/sqrt(12.5), y = h rstd w, w = [1, 0.5].
  const std::vector<float> x{1, 2}, residual{2, 2}, w{1, 0.5f}, sum{3, 4};
  std::vector<float> y(2), h(2), rstd(1), unfused_y(2), unfused_rstd(1);
  cm::add_rmsnorm_fwd(x.data(), residual.data(), w.data(), y.data(), h.data(), rstd.data(), 1, 2);
  cm::rmsnorm_fwd(sum.data(), w.data(), unfused_y.data(), unfused_rstd.data(), 1, 2);
  CHECK(h == sum);
  CHECK(rstd[0] == Approx(unfused_rstd[0]).epsilon(1e-7));
  for (std::size_t j = 0; j < 2; ++j)
    CHECK(y[j] == Approx(unfused_y[j]).epsilon(1e-7));
  CHECK(y[1] == Approx(0.56568542).epsilon(1e-6));
  std::vector<double> ref_y(2), ref_h(2), ref_rstd(1);
  ref::add_rmsnorm_fwd(x.data(), residual.data(), w.data(), 1, 2, 0.0, ref_y.data(), ref_h.data(),
                       ref_rstd.data());
  CHECK(ref_h == std::vector<double>{3, 4});
  CHECK(ref_y[1] == Approx(0.565685424949238).epsilon(1e-12));
}

TEST_CASE("memops by hand: layernorm of [1, 3] and Welford's statistics") {
  // mean 2, biased variance 1, so rstd ~ 1 and y = [-1, 1] w + b.
  const std::vector<float> x{1, 3}, w{2, 2}, b{0.5f, 0.5f};
  std::vector<float> y(2), mean(1), rstd(1);
  cm::layernorm_fwd(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), 1, 2);
  CHECK(mean[0] == 2.0f);
  CHECK(rstd[0] == Approx(1.0 / std::sqrt(1.0 + 1e-5)).epsilon(1e-6));
  CHECK(y[0] == Approx(-1.5).epsilon(1e-5));
  CHECK(y[1] == Approx(2.5).epsilon(1e-5));
  // Welford over [1, 3] and [5], merged: mean 3, sum of squared deviations 4 + 0 + 4 = 8.
  mm::Welford a, c;
  a = mm::welford_push(mm::welford_push(a, 1.0f), 3.0f);
  c = mm::welford_push(c, 5.0f);
  const mm::Welford all = mm::welford_merge(a, c);
  CHECK(all.count == 3.0f);
  CHECK(all.mean == Approx(3.0));
  CHECK(all.m2 == Approx(8.0));
  CHECK(mm::welford_stats(all, 0.0f).rstd == Approx(1.0 / std::sqrt(8.0 / 3.0)));
}

TEST_CASE("memops by hand: softmax of [0, ln 3] is [0.25, 0.75]") {
  const std::vector<float> x{0.0f, std::log(3.0f)};
  std::vector<float> y(2);
  cm::softmax_fwd(x.data(), y.data(), 1, 2);
  CHECK(y[0] == Approx(0.25).epsilon(1e-6));
  CHECK(y[1] == Approx(0.75).epsilon(1e-6));
  // Backward with dy = [1, 0]: sum(y dy) = 0.25, dx = y (dy - 0.25) = [0.1875, -0.1875].
  const std::vector<float> dy{1, 0};
  std::vector<float> dx(2);
  cm::softmax_bwd(y.data(), dy.data(), dx.data(), 1, 2);
  CHECK(dx[0] == Approx(0.1875).epsilon(1e-6));
  CHECK(dx[1] == Approx(-0.1875).epsilon(1e-6));
}

TEST_CASE("memops by hand: a masked logit (-inf) has probability 0, a masked row NaN") {
  // torch.softmax([0, -inf, ln 3, -inf]) = [0.25, 0, 0.75, 0] exactly at the masked places, and
  // torch.softmax([-inf, -inf]) = [nan, nan]. exp_approx once clamped at -87, which gave each
  // masked place e^-87 and a fully masked row 1/cols.
  const float inf = INFINITY, l3 = std::log(3.0f);
  CHECK(mm::exp_or_zero(-inf) == 0.0f);
  CHECK(mm::exp_or_zero(-87.5f) == 0.0f);  // below the smallest normal float: 0, as ex2.ftz
  CHECK(mm::exp_or_zero(-87.3f) == Approx(std::exp(double{-87.3f})).epsilon(3e-7));
  CHECK(mm::exp_approx(-inf) > 0.0f);  // the activations' exp clamps at about 2^-126
  const std::vector<float> x{0.0f, -inf, l3, -inf, -inf, -inf, -inf, -inf};
  std::vector<float> y(8);
  cm::softmax_fwd(x.data(), y.data(), 2, 4);
  CHECK(y[0] == Approx(0.25).epsilon(1e-6));
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == Approx(0.75).epsilon(1e-6));
  CHECK(y[3] == 0.0f);
  for (std::size_t j = 4; j < 8; ++j)
    CHECK(std::isnan(y[j]));
  std::vector<double> yr(8);
  ref::softmax_fwd(x.data(), 2, 4, yr.data());
  CHECK(yr[1] == 0.0);
  CHECK(yr[2] == Approx(0.75).epsilon(1e-7));
  CHECK(std::isnan(yr[5]));
  // Cross-entropy over the same rows, target 2 then 0: loss ln(4/3) and NaN (torch's
  // cross_entropy of a fully masked row is NaN too); the masked places' gradient is exactly 0.
  const std::vector<std::int64_t> targets{2, 0};
  std::vector<float> grad(8), loss(2);
  cm::cross_entropy(x.data(), targets.data(), grad.data(), loss.data(), 2, 4);
  CHECK(loss[0] == Approx(std::log(4.0 / 3.0)).epsilon(1e-6));
  CHECK(grad[1] == 0.0f);
  CHECK(grad[3] == 0.0f);
  CHECK(grad[2] == Approx((0.75 - 1.0) / 2).epsilon(1e-6));
  CHECK(std::isnan(loss[1]));
  std::vector<double> rg(8), rl(2);
  ref::cross_entropy(x.data(), targets.data(), 2, 4, 2, rg.data(), rl.data());
  CHECK(rg[1] == 0.0);
  CHECK(std::isnan(rl[1]));
}

TEST_CASE("memops by hand: cross-entropy's loss and gradient of the mean") {
  // Row 0: logits [0, ln 3], target 1: softmax [0.25, 0.75], loss = ln 4 - ln 3 = ln(4/3).
  // Row 1: logits [ln 3, 0], target 1: softmax [0.75, 0.25], loss = ln 4.
  // Gradient of the mean over 2 rows: (softmax - onehot) / 2.
  const float l3 = std::log(3.0f);
  const std::vector<float> logits{0.0f, l3, l3, 0.0f};
  const std::vector<std::int64_t> targets{1, 1};
  std::vector<float> grad(4), loss(2);
  cm::cross_entropy(logits.data(), targets.data(), grad.data(), loss.data(), 2, 2);
  CHECK(loss[0] == Approx(0.28768207).epsilon(1e-6));
  CHECK(loss[1] == Approx(1.38629436).epsilon(1e-6));
  CHECK(grad[0] == Approx(0.125).epsilon(1e-6));
  CHECK(grad[1] == Approx(-0.125).epsilon(1e-6));
  CHECK(grad[2] == Approx(0.375).epsilon(1e-6));
  CHECK(grad[3] == Approx(-0.375).epsilon(1e-6));
  std::vector<double> rg(4), rl(2);
  ref::cross_entropy(logits.data(), targets.data(), 2, 2, 2, rg.data(), rl.data());
  CHECK(rl[1] == Approx(std::log(4.0)).epsilon(1e-7));  // ln 3 rounded to fp32 in the logits
  CHECK(rg[3] == Approx(-0.375).epsilon(1e-7));
}

TEST_CASE("memops by hand: gelu (tanh) and silu / swiglu") {
  CHECK(mm::gelu(0.0f) == 0.0f);
  CHECK(mm::gelu(1.0f) == Approx(0.8411920).epsilon(1e-6));  // torch gelu(1, approximate='tanh')
  CHECK(mm::gelu_grad(0.0f) == Approx(0.5).epsilon(1e-7));
  CHECK(mm::gelu_grad(1.0f) == Approx(1.0829641).epsilon(1e-6));
  CHECK(std::fabs(mm::gelu(-20.0f)) < 1e-30f);  // tends to 0 without cancellation
  // silu(1) = 1 / (1 + e^-1); swiglu(1, 2) = 2 silu(1); silu(0) = 0.
  CHECK(mm::silu(1.0f) == Approx(0.7310586).epsilon(1e-6));
  namespace ew = elementwise;
  float out[2] = {};
  const float g1u2[] = {1.0f, 2.0f}, g0u5[] = {0.0f, 5.0f};
  ew::Swiglu{}(g1u2, out);
  CHECK(out[0] == Approx(1.4621172).epsilon(1e-6));
  ew::Swiglu{}(g0u5, out);
  CHECK(out[0] == 0.0f);
  // At g = 0: sigmoid = 1/2, silu'(0) = 1/2: dg = dy u / 2, du = dy silu(0) = 0.
  const float g0u3dy2[] = {0.0f, 3.0f, 2.0f};
  ew::SwigluGrad{}(g0u3dy2, out);
  CHECK(out[0] == Approx(3.0).epsilon(1e-6));
  CHECK(out[1] == 0.0f);
  const float x1dy2[] = {1.0f, 2.0f};
  ew::GeluGrad{}(x1dy2, out);
  CHECK(out[0] == Approx(2 * 1.0829641).epsilon(1e-6));
  // The reference, in double: gelu(1), and swiglu's two gradients at g = 1, u = 2, dy = 3:
  // dg = 3 * 2 s (1 + (1 - s)), du = 3 s, s = sigmoid(1).
  std::vector<double> r(2), r2(2);
  double* const y[2] = {r.data(), r2.data()};
  const float one = 1.0f, two = 2.0f, three = 3.0f;
  const float* gelu_in[] = {&one};
  ref::elementwise(MemOp::gelu, MemPass::fwd, gelu_in, 1, y);
  CHECK(r[0] == Approx(0.8411919906082768).epsilon(1e-12));
  const float* swiglu_in[] = {&one, &two, &three};
  ref::elementwise(MemOp::swiglu, MemPass::bwd, swiglu_in, 1, y);
  const double s = 1.0 / (1.0 + std::exp(-1.0));
  CHECK(r[0] == Approx(6 * s * (2 - s)).epsilon(1e-12));
  CHECK(r2[0] == Approx(3 * s).epsilon(1e-12));
}

TEST_CASE("memops by hand: the eager kernels, one element each") {
  namespace ek = elementwise;
  auto one = [](auto kernel, std::vector<float> in) {
    float out[2] = {};
    in.push_back(0.0f);  // a fill reads nothing
    kernel(in.data(), out);
    return out[0];
  };
  CHECK(one(ek::Mul{}, {3.0f, -0.5f}) == -1.5f);
  CHECK(one(ek::Scale{}, {1024.0f}) == 1023.0f);  // a = 1 - 2^-10
  CHECK(one(ek::ScaleInPlace{}, {1024.0f}) == 1023.0f);
  CHECK(one(ek::Sqrt{}, {-4.0f}) == Approx(2.0f).epsilon(1e-6));  // sqrt(|x|)
  CHECK(one(ek::Fill{}, {}) == 0.0f);
  CHECK(one(ek::AxpyInPlace{}, {1.0f, 8.0f}) == 2.0f);  // y + x / 8
  // p - m / (8 (|d| + 1)) = 1 - 2 / 32
  CHECK(one(ek::AddcdivInPlace{}, {1.0f, 2.0f, -3.0f}) == 0.9375f);
  CHECK(one(ek::Silu{}, {0.0f}) == 0.0f);
  CHECK(one(ek::SiluGrad{}, {0.0f, 3.0f}) == Approx(1.5f).epsilon(1e-6));  // dy s (1 + 0)
  // silu'(2) = s (1 + 2 (1 - s)), s = 1 / (1 + e^-2)
  const double s = 1.0 / (1.0 + std::exp(-2.0));
  CHECK(one(ek::SiluGrad{}, {2.0f, 1.0f}) == Approx(s * (1 + 2 * (1 - s))).epsilon(1e-6));
  // The kinds: in place or not, and what each reads.
  CHECK(ek::AddcdivInPlace::kInPlace);
  CHECK(ek::AddcdivInPlace::kIn == 3);
  CHECK_FALSE(ek::Mul::kInPlace);
  CHECK(ek::Fill::kIn == 0);
  CHECK(ek::is_elementwise(MemOp::silu));
  CHECK(ek::is_elementwise(MemOp::add));
  CHECK_FALSE(ek::is_elementwise(MemOp::rmsnorm));
  // The check's tolerance follows the arithmetic: a fill is exact, swiglu's gradient uses exp.
  CHECK(ek::accuracy_of(MemOp::fill, MemPass::fwd) == ek::Accuracy::exact);
  CHECK(ek::accuracy_of(MemOp::add, MemPass::fwd) == ek::Accuracy::arithmetic);
  CHECK(ek::accuracy_of(MemOp::swiglu, MemPass::bwd) == ek::Accuracy::exponential);
}

TEST_CASE("memops by hand: exp_approx and sqrt_approx stay within 2 ulp") {
  double worst_exp = 0, worst_sqrt = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.0137f)
    worst_exp = worse(worst_exp, std::fabs(mm::exp_approx(x) / std::exp(double{x}) - 1.0));
  for (float x = 1e-30f; x < 1e30f; x *= 1.37f)
    worst_sqrt = worse(worst_sqrt, std::fabs(mm::sqrt_approx(x) / std::sqrt(double{x}) - 1.0));
  CHECK(worst_exp < 2.4e-7);  // 2 ulp at the bottom of a binade: 2 x 2^-23
  CHECK(worst_sqrt < 2.4e-7);
  CHECK(mm::exp_approx(0.0f) == 1.0f);
  CHECK(mm::exp_approx(-1000.0f) < 1.2e-38f);
  CHECK(mm::sqrt_approx(0.0f) == 0.0f);
  CHECK(std::isnan(mm::exp_approx(NAN)));
}

TEST_CASE("memops by hand: rope rotates the pair (1, 0) by its angle") {
  // Pair 0 of any head has inv_freq 1: at position 1 its angle is 1 rad.
  CHECK(mm::rope_angle(1, 0, 8) == 1.0f);
  CHECK(mm::rope_angle(3, 1, 4) == Approx(0.03).epsilon(1e-6));  // 3 x 10000^(-2/4)
  const float th = 0.5f;
  const mm::RopePair p = mm::rope_rotate(1.0f, 0.0f, std::cos(th), std::sin(th));
  CHECK(p.lo == Approx(std::cos(0.5)).epsilon(1e-7));
  CHECK(p.hi == Approx(std::sin(0.5)).epsilon(1e-7));
  const mm::RopePair back = mm::rope_rotate_back(p.lo, p.hi, std::cos(th), std::sin(th));
  CHECK(back.lo == Approx(1.0).epsilon(1e-6));
  CHECK(back.hi == Approx(0.0).margin(1e-7));
  // The CPU loop: head_dim 2, one head, positions 0 and 1; x = (1, 0) on both rows.
  std::vector<float> cos(2), sin(2), x{1, 0, 1, 0}, y(4);
  cm::rope_tables(cos.data(), sin.data(), 2, 2);
  cm::rope(x.data(), cos.data(), sin.data(), y.data(), 2, 1, 2, false);
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == Approx(0.5403023).epsilon(1e-6));
  CHECK(y[3] == Approx(0.8414710).epsilon(1e-6));
}

TEST_CASE("memops by hand: one AdamW step") {
  // p = 1, g = 0.5, m = v = 0, lr 0.1, wd 0.1, step 1: m = 0.05, v = 0.001 x 0.25 = 2.5e-4;
  // bias-corrected 0.5 and 0.25; p = 1 (1 - 0.01) - 0.1 x 0.5 / (0.5 + 1e-8) = 0.89.
  const mm::AdamWParams h{0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, 1};
  const mm::AdamWState s = mm::adamw_update({1.0f, 0.0f, 0.0f}, 0.5f, mm::adamw_step(h));
  CHECK(s.m == Approx(0.05).epsilon(1e-6));
  CHECK(s.v == Approx(2.5e-4).epsilon(1e-4));  // 1 - 0.999f is 0.0010000467
  CHECK(s.param == Approx(0.89).epsilon(1e-6));
  std::vector<float> p{1.0f}, g{0.5f}, m{0.0f}, v{0.0f};
  cm::adamw(p.data(), g.data(), m.data(), v.data(), 1, h);
  CHECK(p[0] == Approx(0.89).epsilon(1e-6));
  std::vector<double> pr(1), mr(1), vr(1);
  const float p0 = 1.0f, m0 = 0.0f, v0 = 0.0f;
  ref::adamw(&p0, g.data(), nullptr, &m0, &v0, 1, {0.1, 0.9, 0.999, 1e-8, 0.1, 1}, pr.data(),
             mr.data(), vr.data());
  CHECK(pr[0] == Approx(0.89).epsilon(1e-7));
}

TEST_CASE("memops by hand: fp8 e4m3 rounds to nearest even and saturates at 448") {
  CHECK(mm::fp8_e4m3_encode(448.0f) == 0x7E);
  CHECK(mm::fp8_e4m3_encode(500.0f) == 0x7E);  // saturates
  CHECK(mm::fp8_e4m3_encode(-1e9f) == 0xFE);
  // 1/3 = 1.333 x 2^-2 lies between 1.25 and 1.375 x 2^-2; 1.375 is nearer: exponent 5, mantissa 3.
  CHECK(mm::fp8_e4m3_encode(1.0f / 3.0f) == 0x2B);
  CHECK(fp8_e4m3_to_float(0x2B) == 0.34375f);
  CHECK(mm::fp8_e4m3_encode(1.0f) == 0x38);
  CHECK(mm::fp8_e4m3_encode(std::ldexp(1.0f, -9)) == 0x01);   // the smallest subnormal
  CHECK(mm::fp8_e4m3_encode(std::ldexp(1.0f, -10)) == 0x00);  // a tie: to even, 0
  CHECK(mm::fp8_e4m3_encode(std::ldexp(3.0f, -10)) == 0x02);  // 1.5 x 2^-9: to even, 2
  CHECK(mm::fp8_e4m3_encode(1.0625f) == 0x38);                // 1 + 2^-4: tie, to even 1.0
  CHECK(mm::fp8_e4m3_encode(1.1875f) == 0x3A);                // 1 + 3 x 2^-4: to 1.25
  CHECK((mm::fp8_e4m3_encode(NAN) & 0x7F) == 0x7F);
  // Every bf16 value of [-512, 512] encodes as common/dtype's independent conversion does.
  int mismatches = 0;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float x = bf16_to_float(static_cast<std::uint16_t>(b));
    if (!(std::fabs(x) <= 512.0f)) continue;
    mismatches += mm::fp8_e4m3_encode(x) != float_to_fp8_e4m3(x);
  }
  CHECK(mismatches == 0);
}

TEST_CASE("memops by hand: bf16 rounds to nearest even") {
  // 1 + 2^-8 lies halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): to 0x3F80.
  CHECK(mm::bf16_encode(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  // 1 + 3 x 2^-8 lies halfway between 0x3F81 (odd) and 0x3F82: to 0x3F82.
  CHECK(mm::bf16_encode(1.0f + std::ldexp(3.0f, -8)) == 0x3F82);
  CHECK(mm::bf16_encode(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3F81);
  CHECK(mm::bf16_decode(0x3F82) == 1.0f + std::ldexp(1.0f, -6));
  CHECK(mm::bf16_encode(INFINITY) == 0x7F80);
  CHECK(std::isnan(mm::bf16_decode(mm::bf16_encode(NAN))));
  CHECK(ref::round_to_bf16(1.0 + std::ldexp(3.0, -8)) == 1.0 + std::ldexp(1.0, -6));
  int mismatches = 0;
  for (float x = -3.0f; x < 3.0f; x += 0.000977f)
    mismatches += mm::bf16_encode(x) != float_to_bf16(x);
  CHECK(mismatches == 0);
}

TEST_CASE("memops by hand: the embedding's backward adds tokens of the same id") {
  // vocab 3, hidden 2; tokens 0 and 1 both have id 1, token 2 id 2, nothing looks up row 0.
  const std::vector<float> dy{1, 2, 10, 20, 100, 200};
  const std::vector<std::int64_t> ids{1, 1, 2};
  std::vector<float> dtable(6, -7.0f);  // zeroed by the operator
  cm::embedding_bwd(dy.data(), ids.data(), dtable.data(), 3, 2, 3);
  CHECK(dtable == std::vector<float>{0, 0, 11, 22, 100, 200});
  std::vector<float> y(6);
  const std::vector<float> table{0, 1, 2, 3, 4, 5};
  cm::embedding_fwd(table.data(), ids.data(), y.data(), 3, 2);
  CHECK(y == std::vector<float>{2, 3, 2, 3, 4, 5});
}

namespace {

MemopCase make_case(MemOp op, MemPass pass, std::int64_t rows, std::int64_t cols,
                    DType t = DType::fp32) {
  MemopCase c = testing::memop_case(op, pass, t, rows, cols);
  if (op == MemOp::rope) {
    c.heads = 2;
    c.kv_heads = 1;
    c.head_dim = cols / 3;
  }
  if (op == MemOp::embedding) c.vocab = 40;
  return c;
}

// A small case of every operator the CPU runs, in every pass it has: 37 rows of 100 (rows and
// rows shorter than a 16-lane multiple), and a larger one (several tasks per operator).
std::vector<MemopCase> every_case(std::int64_t rows, std::int64_t cols) {
  std::vector<MemopCase> out;
  for (MemOp op : all_memops()) {
    if (is_copy(op)) continue;
    DType t = DType::fp32;
    if (op == MemOp::cast_to_fp32 || op == MemOp::fp8_quantize) t = DType::bf16;
    for (MemPass pass : {MemPass::fwd, MemPass::bwd}) {
      if (pass == MemPass::bwd && !has_backward(op)) continue;
      out.push_back(make_case(op, pass, rows, op == MemOp::rope ? 48 * 3 : cols, t));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("memops check: NaN matches NaN, an infinity itself, and the scale is the finite values") {
  OutputCheck c;
  c.tolerance = 1e-6;
  c.add(0, INFINITY, INFINITY);  // a masked target's loss on both sides: no error
  c.add(1, 2.0, 2.0 + 1e-9);
  c.add(2, NAN, NAN);
  CHECK(c.scale() == 2.0 + 1e-9);  // not inf, which made every finite error read 0
  CHECK(c.relative() == Approx(0.5e-9).epsilon(1e-6));
  CHECK(c.passed());
  CHECK(c.where() == "[1]");
  OutputCheck wrong;  // inf where a finite value was due, the other infinity, NaN for a number
  wrong.tolerance = 1e-6;
  wrong.add(0, INFINITY, 1.0);
  CHECK_FALSE(wrong.passed());
  OutputCheck sign;
  sign.tolerance = 1e-6;
  sign.add(0, -INFINITY, INFINITY);
  CHECK_FALSE(sign.passed());
  OutputCheck nan;
  nan.tolerance = 1e-6;
  nan.add(0, 1.0, 1.0);
  nan.add(1, NAN, 3.0);
  CHECK_FALSE(nan.passed());
  CHECK(nan.where() == "[1]");
}

TEST_CASE("the CPU memops provider measures and checks every operator") {
  auto provider = make_cpu_memop_provider();
  CHECK(provider->backend() == "cpu");
  CHECK(provider->name() == "cpu");
  const MemopRunOptions o = testing::quick_checked<MemopRunOptions>();
  auto run_all = [&](const std::vector<MemopCase>& cases) {
    for (const MemopCase& c : cases) {
      INFO(memop_name(c.op) << " " << mem_pass_name(c.pass) << " " << c.dims());
      REQUIRE_FALSE(provider->unsupported(c));
      const MemopResult r = provider->run(c, o);
      INFO(r.note << " / " << r.check_detail);
      CHECK(r.status == Status::ok);
      CHECK(r.measurement.samples_us.size() >= 3);
      CHECK(r.measurement.stats.mean > 0);
      REQUIRE(r.check_passed);
      CHECK(*r.check_passed);
      REQUIRE(r.max_abs_err);
      REQUIRE(r.tolerance);
      CHECK(*r.max_abs_err <= *r.tolerance);
      CHECK(r.cache == "rotate");
      CHECK(r.working_set_bytes > 0);
      CHECK_THAT(r.impl, Catch::Contains("threads"));
    }
  };
  run_all(every_case(37, 100));
  run_all(every_case(700, 333));
  // The copy, in fp32 and bf16 (bytes are bytes).
  run_all({make_case(MemOp::copy, MemPass::fwd, 64, 1000),
           make_case(MemOp::copy, MemPass::fwd, 64, 1000, DType::bf16)});
}

TEST_CASE("the CPU memops provider's check fails on a spoiled output") {
  auto provider = make_cpu_memop_provider();
  MemopRunOptions o = testing::quick_checked<MemopRunOptions>();
  o.corrupt_for_test = true;
  for (const MemopCase& c : {make_case(MemOp::rmsnorm, MemPass::fwd, 16, 64),
                             make_case(MemOp::fp8_quantize, MemPass::fwd, 16, 64, DType::bf16),
                             make_case(MemOp::copy, MemPass::fwd, 16, 64)}) {
    INFO(memop_name(c.op));
    const MemopResult r = provider->run(c, o);
    REQUIRE(r.check_passed);
    CHECK_FALSE(*r.check_passed);
    CHECK(*r.max_abs_err > *r.tolerance);
    CHECK_THAT(r.check_detail, Catch::Contains("[8,0]"));  // the middle element, named
  }
}

TEST_CASE("the CPU memops provider says why it cannot run a case") {
  auto provider = make_cpu_memop_provider();
  const auto bf16_add =
      provider->unsupported(make_case(MemOp::add, MemPass::fwd, 4, 4, DType::bf16));
  REQUIRE(bf16_add);
  CHECK_THAT(*bf16_add, Catch::Contains("fp32") && Catch::Contains("--backend cuda"));
  const auto h2d = provider->unsupported(make_case(MemOp::h2d, MemPass::fwd, 4, 4));
  REQUIRE(h2d);
  CHECK_THAT(*h2d, Catch::Contains("--backend cuda"));
  CHECK_FALSE(provider->unsupported(make_case(MemOp::copy, MemPass::fwd, 4, 4, DType::fp16)));
  CHECK_FALSE(provider->unsupported(make_case(MemOp::adamw_bf16, MemPass::fwd, 4, 4)));
  CHECK(run_memop_case(*provider, make_case(MemOp::peer, MemPass::fwd, 4, 4),
                       testing::quick_checked<MemopRunOptions>())
            .status == Status::skipped);
}

TEST_CASE("the CPU roof is the best of its six loops") {
  const CpuMemoryRoof roof = measure_cpu_memory_roof(2);
  REQUIRE(roof.loops.size() == 6);
  double best = 0;
  for (const auto& [name, gbps] : roof.loops) {
    INFO(name);
    CHECK(gbps > 0);
    best = std::max(best, gbps);
  }
  CHECK(roof.gbps == best);
  CHECK_FALSE(roof.best.empty());
}

// The error maxima of these tests keep NaN (tests/unit/worst_error.hpp): std::max would drop it.
TEST_CASE("worst_error: the largest error keeps a NaN, wherever it comes") {
  CHECK(worse(1.0, 2.0) == 2.0);
  CHECK(worse(2.0, 1.0) == 2.0);
  CHECK(std::isnan(worse(0.0, std::nan(""))));
  CHECK(std::isnan(worse(std::nan(""), 5.0)));
  CHECK_FALSE(worse(worse(0.0, std::nan("")), 1.0) < 1e-5);
}
