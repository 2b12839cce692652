// The formulas our CUDA kernels compute with the GPU's fast exp and reciprocal
// (memops/fast_math.hpp), run here with models of ex2.approx.ftz.f32 and rcp.approx.ftz.f32 at
// their documented worst (ex2: 2 ulp off the correctly rounded 2^a, either way; rcp: 1 ulp off
// the correctly rounded 1/a, either way; results below 2^-126 flushed to 0), against the exact
// functions in double: the bounds fast_math.hpp derives, and the check's tolerances
// (memops/memop_check.hpp) with them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/uniform_value.hpp"
#include "memops/elementwise.hpp"
#include "memops/fast_math.hpp"
#include "memops/memop_check.hpp"
#include "memops/reference_memops.hpp"
#include "tests/unit/fast_math_models.hpp"
#include "tests/unit/worst_error.hpp"

using namespace opbench;
namespace fm = opbench::fast_math;
namespace mm = opbench::memop_math;
using opbench::testing::for_each_model;
using opbench::testing::Model;
using opbench::testing::step_ulps;

namespace {

double exact_sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

}  // namespace

TEST_CASE("fast math: the models are 2 and 1 ulp off, and flush as .ftz does") {
  using Up = Model<2, 1>;
  CHECK(Up::ex2(0.0f) == step_ulps(1.0f, 2));
  CHECK(Up::ex2(-INFINITY) == 0.0f);  // PTX: -inf gives +0
  CHECK(Up::ex2(-126.5f) == 0.0f);    // below 2^-126: flushed
  CHECK(Up::rcp(4.0f) == step_ulps(0.25f, 1));
  CHECK(Up::rcp(INFINITY) == 0.0f);
}

TEST_CASE("fast math: sigmoid and 1 - sigmoid within the bounds fast_math.hpp derives") {
  // |ds| <= (1.53 + 3s)u whatever z; 1 - s within (0.35 + 9(1 - s))u where e <= 1 (z >= 0), and
  // within |ds| + (1 - s)u where not.
  double worst_s = 0, worst_one_minus = 0;
  for_each_model([&](auto model) {
    using M = fm::FastSigmoid<decltype(model)>;
    for (double zd = -100; zd <= 100; zd += 0.00731) {
      const float z = static_cast<float>(zd);
      const mm::Sigmoid got = M::sigmoid(z);
      const double s = exact_sigmoid(z), one_minus = exact_sigmoid(-static_cast<double>(z));
      const double ds = std::fabs(got.s - s), d1 = std::fabs(got.one_minus - one_minus);
      const double bound_s = (1.53 + 3 * s) * kU;
      const double bound_1 = z >= 0 ? (0.35 + 9 * one_minus) * kU : bound_s + one_minus * kU;
      worst_s = worse(worst_s, ds / bound_s);
      worst_one_minus = worse(worst_one_minus, d1 / bound_1);
    }
  });
  INFO("worst |ds| / bound " << worst_s << ", worst |d(1 - s)| / bound " << worst_one_minus);
  CHECK(worst_s <= 1.0);
  CHECK(worst_one_minus <= 1.0);
  CHECK(worst_s > 0.3);  // the bound is not loose beyond use
  // The limits: sigmoid(-100) is 0 (e overflows, rcp(inf) = 0), and its 1 - s exactly 1.
  const mm::Sigmoid far = fm::FastSigmoid<Model<2, 1>>::sigmoid(-100.0f);
  CHECK(far.s == 0.0f);
  CHECK(far.one_minus == 1.0f);
  CHECK(std::isnan(fm::FastSigmoid<Model<2, 1>>::sigmoid(NAN).s));
}

namespace {

// First-order bounds, in u, of the errors of s = sigmoid(z) and o = 1 - s as computed from an e
// whose relative error is r_e (in u) and a reciprocal within r_rcp: s within s (1 - s) r_e +
// (1 + r_rcp) s (the addition 1 + e and the reciprocal); o = e s (the GPU's where z >= 0) within
// o (r_e + r_s + 1), o = 1 - s within ds + o.
struct SigmoidError {
  double s, o;
};
SigmoidError sigmoid_error(double z, double r_e, double r_rcp, bool product) {
  const double s = exact_sigmoid(z), o = exact_sigmoid(-z);
  const double ds = s * o * r_e + (1 + r_rcp) * s;
  const double r_s = o * r_e + 1 + r_rcp;
  return {ds, product && z >= 0 ? o * (r_e + r_s + 1) : ds + o};
}
// The GPU's: ex2 within 5u on an argument rounded with 1.23u of its size; rcp within 2u.
SigmoidError gpu_sigmoid_error(double z) {
  return sigmoid_error(z, 1.23 * std::fabs(z) + 5, 2, true);
}
// The CPU's: exp_approx within 4u (checked below), an IEEE division within u, 1 - s subtracted.
SigmoidError cpu_sigmoid_error(double z) {
  return sigmoid_error(z, 4, 1, false);
}

// An activation's output f(x) (dy = u = 1) and the first-order error its sigmoid's error makes,
// |df/ds| ds + |df/do| do; `err` gives ds and do for the sigmoid's argument z.
struct Sensitivity {
  double f, error;
};
template <class Err>
Sensitivity silu_sensitivity(double x, Err err) {  // f = x s (silu, swiglu, swiglu's du)
  const SigmoidError e = err(x);
  return {x * exact_sigmoid(x), std::fabs(x) * e.s};
}
template <class Err>
Sensitivity silu_grad_sensitivity(double x, Err err) {  // f = s (1 + x o) (and swiglu's dg)
  const double s = exact_sigmoid(x), o = exact_sigmoid(-x);
  const SigmoidError e = err(x);
  return {s * (1 + x * o), std::fabs(1 + x * o) * e.s + std::fabs(s * x) * e.o};
}
template <class Err>
Sensitivity gelu_sensitivity(double x, Err err) {  // f = x s(2a)
  const double z = 2 * mm::kGeluK * (x + mm::kGeluC * x * x * x);
  return {x * exact_sigmoid(z), std::fabs(x) * err(z).s};
}
template <class Err>
Sensitivity gelu_grad_sensitivity(double x, Err err) {  // f = s + 2 x s o K (1 + 3 C x^2)
  const double z = 2 * mm::kGeluK * (x + mm::kGeluC * x * x * x);
  const double s = exact_sigmoid(z), o = exact_sigmoid(-z);
  const double k = 2 * x * mm::kGeluK * (1 + 3 * mm::kGeluC * x * x);
  const SigmoidError e = err(z);
  return {s + k * s * o, std::fabs(1 + k * o) * e.s + std::fabs(k * s) * e.o};
}

// The largest error `sensitivity` gives over x in [-4, 4), relative to the largest |f|, in u.
template <class F>
double sensitivity_bound(F sensitivity) {
  double worst = 0, scale = 0;
  for (int i = 0; i <= 80000; ++i) {
    const Sensitivity s = sensitivity(-4.0 + i * 1e-4);
    worst = worse(worst, s.error);
    scale = std::max(scale, std::fabs(s.f));
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("fast math: the activations' sigmoid error, carried to the outputs, is bounded") {
  // memop_check.hpp's activation tolerance takes these: at most 6.6u of the output's scale on
  // the GPU, 37.4u on the CPU (whose 1 - s, a subtraction, carries s's error 20 times into gelu's
  // gradient at x = 4), for inputs in [-4, 4).
  auto gpu = [](double z) { return gpu_sigmoid_error(z); };
  auto cpu = [](double z) { return cpu_sigmoid_error(z); };
  const double gpu_worst =
      std::max({sensitivity_bound([&](double x) { return silu_sensitivity(x, gpu); }),
                sensitivity_bound([&](double x) { return silu_grad_sensitivity(x, gpu); }),
                sensitivity_bound([&](double x) { return gelu_sensitivity(x, gpu); }),
                sensitivity_bound([&](double x) { return gelu_grad_sensitivity(x, gpu); })});
  const double cpu_worst =
      std::max({sensitivity_bound([&](double x) { return silu_sensitivity(x, cpu); }),
                sensitivity_bound([&](double x) { return silu_grad_sensitivity(x, cpu); }),
                sensitivity_bound([&](double x) { return gelu_sensitivity(x, cpu); }),
                sensitivity_bound([&](double x) { return gelu_grad_sensitivity(x, cpu); })});
  INFO("GPU " << gpu_worst << "u, CPU " << cpu_worst << "u");
  CHECK(gpu_worst <= 6.6);
  CHECK(gpu_worst > 6.4);  // gelu's gradient sets it
  CHECK(cpu_worst <= 37.4);
  // The CPU's exp_approx within the 4u taken above.
  double worst_exp = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f)
    worst_exp = worse(worst_exp, std::fabs(mm::exp_approx(x) / std::exp(double{x}) - 1.0));
  CHECK(worst_exp <= 4 * kU);
}

namespace {

// The largest |got - want| over elementwise kernel F's outputs, relative to each output's
// largest |want| (as --check measures), with F's sigmoid M, on n inputs as the benchmark fills
// them: the exp argument uniform in [-4, 4), the others in [-1, 1).
template <class F, class M>
double activation_error(MemOp op, MemPass pass, std::int64_t n) {
  std::vector<std::vector<float>> in(3, std::vector<float>(static_cast<std::size_t>(n)));
  for (std::size_t k = 0; k < 3; ++k)
    for (std::int64_t i = 0; i < n; ++i)
      in[k][static_cast<std::size_t>(i)] =
          (k == 0 ? 4.0f : 1.0f) * uniform_value(100 + k, static_cast<std::uint64_t>(i));
  std::vector<std::vector<double>> want(2, std::vector<double>(static_cast<std::size_t>(n)));
  const float* ins[3] = {in[0].data(), in[1].data(), in[2].data()};
  double* outs[2] = {want[0].data(), want[1].data()};
  reference_memops::elementwise(op, pass, ins, n, outs);
  double worst = 0;
  for (int k = 0; k < F::kOut; ++k) {
    double scale = 0, err = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto at = static_cast<std::size_t>(i);
      float a[3] = {in[0][at], in[1][at], in[2][at]}, b[2] = {};
      F{}.template operator()<M>(a, b);
      scale = std::max(scale, std::fabs(want[static_cast<std::size_t>(k)][at]));
      err = worse(err, std::fabs(b[k] - want[static_cast<std::size_t>(k)][at]));
    }
    worst = worse(worst, err / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE("fast math: every activation, the GPU's and the CPU's, within the check's tolerance") {
  // With ex2 and rcp at their documented worst (either way) the outputs stay within the
  // sigmoid's 6.6u and ten roundings; the CPU's within its 37.4u and ten roundings.
  namespace ew = elementwise;
  const std::int64_t n = 100000;
  auto each = [&](auto kernel, MemOp op, MemPass pass) {
    using F = decltype(kernel);
    double fast = 0;
    for_each_model([&](auto model) {
      fast = worse(fast, activation_error<F, fm::FastSigmoid<decltype(model)>>(op, pass, n));
    });
    const double cpu = activation_error<F, mm::ExpApprox>(op, pass, n);
    INFO(memop_name(op) << " " << mem_pass_name(pass) << ": GPU's worst " << fast / kU << "u, CPU "
                        << cpu / kU << "u");
    CHECK(fast <= (6.6 + 10) * kU);
    CHECK(cpu <= (37.4 + 10) * kU);
    CHECK(fast <= kActivationTolerance);
  };
  each(ew::Silu{}, MemOp::silu, MemPass::fwd);
  each(ew::SiluGrad{}, MemOp::silu, MemPass::bwd);
  each(ew::Swiglu{}, MemOp::swiglu, MemPass::fwd);
  each(ew::SwigluGrad{}, MemOp::swiglu, MemPass::bwd);
  each(ew::Gelu{}, MemOp::gelu, MemPass::fwd);
  each(ew::GeluGrad{}, MemOp::gelu, MemPass::bwd);
}

TEST_CASE("fast math: softmax's exponentials within the fast-exp allowance") {
  // A row of 8192 logits uniform in [-4, 4) (|x - max| < 8): every e^(x - max) as
  // exp_shifted, the sum, and y = e / sum, against the exact softmax, relative to the largest y.
  const std::int64_t cols = 8192;
  std::vector<float> x(static_cast<std::size_t>(cols));
  for (std::int64_t j = 0; j < cols; ++j)
    x[static_cast<std::size_t>(j)] = 4.0f * uniform_value(7, static_cast<std::uint64_t>(j));
  x[17] = -INFINITY;  // a masked logit
  std::vector<double> want(x.size());
  reference_memops::softmax_fwd(x.data(), 1, cols, want.data());
  const float max = *std::max_element(x.begin(), x.end());
  double worst_term = 0, worst_y = 0;
  for_each_model([&](auto model) {
    using P = decltype(model);
    const float shift = fm::exp_origin(max);
    double sum = 0;
    for (float v : x) {
      const float e = fm::exp_shifted<P>(v, shift);
      sum += e;
      worst_term = worse(worst_term, std::fabs(e - std::exp(static_cast<double>(v) - max)));
    }
    const float inv = static_cast<float>(1.0 / sum);
    double scale = 0, err = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const float y = fm::exp_shifted<P>(x[j], shift) * inv;
      scale = std::max(scale, want[j]);
      err = worse(err, std::fabs(y - want[j]));
    }
    worst_y = worse(worst_y, err / scale);
    CHECK(fm::exp_shifted<P>(x[17], shift) == 0.0f);  // the masked place: exactly 0
  });
  // A term of e^(x - max) <= 1: within 5u + 2.23u/e of it; the softmax within the fast-exp
  // allowance on top of the reduction's bound at this K.
  CHECK(worst_term <= (5 + 2.23 / std::exp(1.0)) * kU);
  CHECK(worst_y <= kFastExpAllowance + reduction_tolerance(cols));
  // A fully masked row: origin 0, every term 0, the sum 0, y = 0 x (1/0) = NaN, as torch.
  const float shift = fm::exp_origin(-INFINITY);
  CHECK(shift == 0.0f);
  const float e = fm::exp_shifted<Model<2, 1>>(-INFINITY, shift);
  CHECK(e == 0.0f);
  CHECK(std::isnan(e * (1.0f / 0.0f)));
  // The largest logit's term is 1 however large the logits: with 2^(x log2 e - max log2 e), the
  // rounding of max log2 e (up to half its ulp: 18 at 1e9, 440 at 1e10) was the term's exponent,
  // which over- or underflowed (a NaN row) past about 1.5e9 and at every max past 2.4e38.
  for (const float big : {1e3f, 1e9f, 1e10f, -1e10f, 3e38f, -3e38f}) {
    CAPTURE(big);
    CHECK(fm::exp_shifted<Model<0, 0>>(big, fm::exp_origin(big)) == 1.0f);
    CHECK(fm::exp_shifted<Model<0, 0>>(-INFINITY, fm::exp_origin(big)) == 0.0f);
  }
  // Rescaling a part's sum to a larger max: e^(from - to), 1 for equal maxes (-inf too).
  CHECK(fm::rescale<Model<0, 0>>(-INFINITY, -INFINITY) == 1.0f);
  CHECK(fm::rescale<Model<0, 0>>(-INFINITY, 2.0f) == 0.0f);
  CHECK(fm::rescale<Model<0, 0>>(1.0f, 2.0f) == Approx(std::exp(-1.0)).epsilon(1e-7));
}
