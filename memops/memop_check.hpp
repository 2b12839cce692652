#pragma once
// --check for every memops provider, written once: each output of a case compared with the plain
// fp64 reference (memops/reference_memops), the tolerance rule, and the verdict a row carries.
// Providers give only an OperandReader: a slice of host memory (the CPU) or a fetch from the
// device (CUDA). max_abs_err has one meaning in every row: the largest |got - want| of the worst
// output relative to that output's largest |want|, held to `tolerance` (docs/outputs.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/dtype.hpp"
#include "memops/memop.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {

// One output compared with the reference: the largest |got - want| and where, relative to the
// output's largest |want| (its scale), against `tolerance`.
struct OutputCheck {
  std::string name;
  double tolerance = 0;
  std::int64_t cols = 0;  // to name an element [row, col] (0: by its index)
  double max_ref = 0, max_err = 0;
  std::int64_t worst = -1;
  double got = 0, want = 0;

  // NaN matches NaN (a fully masked softmax row), an infinity the same infinity (a masked
  // target's loss), and neither anything else; the scale is the largest finite |want|, so that an
  // infinite reference neither makes every other error read 0 nor (as inf - inf) hides the check.
  void add(std::int64_t i, double g, double w) {
    if (std::isfinite(w)) max_ref = std::max(max_ref, std::fabs(w));
    double err = std::fabs(g - w);
    if (std::isnan(g) || std::isnan(w))
      err = std::isnan(g) && std::isnan(w) ? 0.0 : INFINITY;
    else if (g == w)
      err = 0.0;
    else if (std::isinf(g) || std::isinf(w))
      err = INFINITY;
    if (worst < 0 || err > max_err) {
      max_err = err;
      worst = i;
      got = g;
      want = w;
    }
  }
  double scale() const { return max_ref > 0 ? max_ref : 1.0; }
  double relative() const { return max_err / scale(); }
  bool passed() const { return relative() <= tolerance; }
  double ratio() const {
    if (tolerance > 0) return relative() / tolerance;
    return relative() > 0 ? INFINITY : 0.0;
  }
  std::string where() const {
    if (cols > 0 && worst >= 0) return fmt::format("{}[{},{}]", name, worst / cols, worst % cols);
    return fmt::format("{}[{}]", name, worst);
  }
};

// The elements [first, first + count) of one of the case's operands (memop_operands' names) as
// the check reads them: decoded to float (fp32, bf16, fp16 and e4m3 all fit exactly), as token
// ids, or as the raw bits of a bf16 input the reference takes as bits.
class OperandReader {
 public:
  virtual ~OperandReader() = default;
  virtual std::vector<float> floats(const std::string& name, std::int64_t first,
                                    std::int64_t count) = 0;
  virtual std::vector<std::int64_t> ids(const std::string& name, std::int64_t first,
                                        std::int64_t count) = 0;
  virtual std::vector<std::uint16_t> bits16(const std::string& name, std::int64_t first,
                                            std::int64_t count) = 0;
};

// ---- what an operator's check works with (its spec's check, memops/memop_spec.hpp) ----

// Tolerances, on the error relative to the output's largest magnitude (results computed in fp32
// against an fp64 reference of the same inputs; u = 2^-24, fp32's unit roundoff). The CPU loops
// and our CUDA kernels run the same memop_math functions, but for the exponentials (our kernels
// take the GPU's ex2.approx and rcp.approx, memops/fast_math.hpp) and the order of the sums.
//   exact        0: gathers, copies, casts and fp8 round once, to the same value (fp8's x scale
//                is exact in fp32: bf16's 8 significant bits times 112 = 7 x 16's 3).
//   elementwise  8u: a few roundings (add and add_rmsnorm's residual_out 1; rope 3; AdamW 3 for
//                each of param, m and v, whose update term m / (sqrt(v) + eps) is lr-sized next
//                to the parameter).
//   activations  64u: the activations and their gradients (Accuracy::exponential in
//                memops/elementwise.hpp): the sigmoid's error (the CPU's exp_approx within 4u,
//                an IEEE division and 1 - s subtracted; the GPU's ex2.approx within 5u and
//                rcp.approx within 2u, 1 - s without cancellation, fast_math.hpp), carried to the
//                outputs by their sensitivity to s and 1 - s: at most 37.4u (CPU: gelu's gradient
//                at x = 4 takes 20 times the error of s in 1 - s) and 6.6u (GPU) of the output's
//                scale for inputs in [-4, 4) (first order, worked out by
//                tests/unit/test_fast_math.cpp); then up to ten roundings. With the GPU's
//                instructions at their documented worst the outputs stay within 5u (the same
//                test); the CPU's measured up to 17.4u (gelu's gradient).
//   reductions   u (16 + 2 sqrt(K)) for reductions of K terms (norms, softmax, cross-entropy,
//                dw and db over the rows, tokens sharing an embedding row): the rounding errors
//                of the 16 lane sums have random signs and grow as sqrt(K) (measured: 5e-7 at
//                K = 8192, bound 1.2e-5). The worst case, K/16 u, would be too loose to see a
//                dropped term of a sum of squares, whose effect is 1/K.
//   fast exp     24u more for softmax and cross-entropy: our kernels take e^(x - max) as
//                ex2.approx((x - max) log2e) (fast_math::exp_shifted), within 5u + 2.23u
//                |x - max| of each term (5u + 2.23u/e = 5.8u of the largest, e^0 = 1), and the
//                row's sum within 5u + 2.23u max |x - max| = 22.8u for inputs in [-4, 4) (a
//                weighted mean of the terms' errors): the largest output within 30.7u plus the
//                sum's rounding, where exp_approx's 4u gave 10u; 20.7u more, taken as 24u.
//   rope tables  u (8 + 4 max position), absolute: HF's fp32 angle p inv_freq is off by about
//                2u p (the product's and inv_freq's roundings); the reference's is exact.
//   bf16 param   2^-8 + 8u: AdamW's bf16 parameter against the exact reference is within half a
//                bf16 ulp (2^-8 relative at worst); it must also equal the bf16 rounding of the
//                fp32 result, exactly.
// An output stored in bf16 or fp16 is rounded once more, to nearest: |rn(y') - y| <= u_t |y'| +
// |y' - y|, so u_t more (2^-8 for bf16, 2^-11 for fp16), relative to the scale. bf16 stores
// round with the hardware's cvt.rn.bf16x2.f32, to nearest even as memop_math::bf16_encode does.
inline constexpr double kU = 0x1p-24;  // fp32's unit roundoff
inline constexpr double kElementwiseTolerance = 8 * kU;
inline constexpr double kActivationTolerance = 64 * kU;
inline constexpr double kFastExpAllowance = 24 * kU;
inline double reduction_tolerance(std::int64_t k) {
  return kU * (16.0 + 2.0 * std::sqrt(static_cast<double>(k)));
}
// An fp32 bound for an output stored in `t`.
inline double stored_in(DType t, double fp32_tolerance) {
  return fp32_tolerance + (t == DType::fp32 ? 0.0 : unit_roundoff(t));
}

// The rule of a reduction over K terms (`terms` says which), in words.
inline std::string reduction_rule(std::int64_t k, const char* terms, const std::string& rounding) {
  return fmt::format("u(16 + 2 sqrt(K)), K = {} ({}){}", k, terms, rounding);
}

// The reference runs on blocks of about a million elements, read block by block:
// body(first_row, end_row) over whole rows, body(first, end) over elements.
inline constexpr std::int64_t kCheckBlock = 1 << 20;
template <class Body>
void row_blocks(std::int64_t rows, std::int64_t cols, Body&& body) {
  const std::int64_t per = std::max<std::int64_t>(1, kCheckBlock / std::max<std::int64_t>(1, cols));
  for (std::int64_t r0 = 0; r0 < rows; r0 += per)
    body(r0, std::min(rows, r0 + per));
}
template <class Body>
void element_blocks(std::int64_t n, Body&& body) {
  for (std::int64_t i0 = 0; i0 < n; i0 += kCheckBlock)
    body(i0, std::min(n, i0 + kCheckBlock));
}

// One case's check: the case, the reads of its operands, the values of its in-place operands
// before the run (`saved`, in memop_operands' order: AdamW's param, m, v), and the outputs it has
// compared so far (a deque: add() hands out references that stay valid).
class ReferenceCheck {
 public:
  ReferenceCheck(const MemopCase& c, OperandReader& read,
                 const std::vector<std::vector<float>>& saved)
      : c(c), read(read), saved(saved) {}

  const MemopCase& c;
  OperandReader& read;
  const std::vector<std::vector<float>>& saved;

  // A new output compared at the given bound (its elements named [row, col] in rows of `cols`).
  OutputCheck& add(std::string name, double tolerance, std::int64_t cols = 0) {
    checks_.push_back(OutputCheck{std::move(name), tolerance, cols});
    return checks_.back();
  }
  std::vector<float> get(const std::string& name, std::int64_t first, std::int64_t count) {
    return read.floats(name, first, count);
  }
  // got[i] against want[i], the elements first, first + 1, ... of `check`'s output.
  static void compare(OutputCheck& check, const std::vector<float>& got, const double* want,
                      std::int64_t first) {
    for (std::size_t i = 0; i < got.size(); ++i)
      check.add(first + static_cast<std::int64_t>(i), got[i], want[i]);
  }
  std::deque<OutputCheck> take() { return std::move(checks_); }

 private:
  std::deque<OutputCheck> checks_;
};

// `v` holding `count` zeros, as the reference's output.
inline double* zeroed(std::vector<double>& v, std::int64_t count) {
  v.assign(static_cast<std::size_t>(count), 0.0);
  return v.data();
}

// ---- the check of a case ----

// Every output of `c` against the reference. `saved`: the in-place operands' values before the
// run, in memop_operands' order (AdamW's param, m, v). Not for copies (compare_bytes).
std::deque<OutputCheck> check_memop_outputs(const MemopCase& c, OperandReader& read,
                                            const std::vector<std::vector<float>>& saved);
// The bound each output of `c` is held to, in words, for the row's detail.
std::string memop_tolerance_rule(const MemopCase& c);
// A copy compared byte for byte: `got` against `want`, `bytes` each, in elements of `t`; a
// mismatch is named [row, col] in rows of `cols` elements (0: by its index).
OutputCheck compare_bytes(const std::string& name, const unsigned char* want,
                          const unsigned char* got, std::size_t bytes, DType t, std::int64_t cols);
// The verdict, the worst output's error and bound, and the detail of a case's checks.
void summarize_checks(const std::deque<OutputCheck>& checks, const std::string& rule,
                      MemopResult& r);

}  // namespace opbench
