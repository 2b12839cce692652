// The device check's element conversions (collectives/pattern_element.hpp), run on the host as
// the count kernel runs them: a result NCCL computed is stored in the collective's type, read
// back to double and compared with the expected value. An fp64 avg at 3 ranks (values k/3) and
// the pattern's own at 5 ranks must pass: read back through float, as the generic branch once
// did, they missed their tolerance by ~1e-8.
#include <catch2/catch.hpp>

#include <cmath>

#include "coll_call.hpp"
#include "collectives/coll_check.hpp"
#include "collectives/pattern_element.hpp"

using namespace opbench;
using opbench::testing::coll_call;

namespace {

// NCCL's fp64 avg (PreMulSum): Σ fl(x_r · fl(1/n)) in double, ranks in order.
double nccl_fp64_avg(const PatternSpec& s, long long i) {
  const double scale = 1.0 / s.nranks;
  double acc = 0;
  for (int r = 0; r < s.nranks; ++r)
    acc += pattern_input(s, r, i) * scale;
  return acc;
}

CollCall fp64_avg() {
  return coll_call(CollOp::all_reduce, DType::fp64, RedOp::avg, 64 * 8, 3);
}

}  // namespace

TEST_CASE("device check: fp64 avg values k/3 at 3 ranks read back within the 5e-16 tolerance") {
  const PatternSpec s = make_pattern(fp64_avg(), 3);
  REQUIRE(s.tolerance > 0);
  REQUIRE(s.tolerance < 1e-15);  // (c + 2)·u·c/n for c = 3 contributors: 5·2^-53 ≈ 5.6e-16
  const double third = 1.0 / 3;  // NCCL's fl(1/n)
  for (int k = -3; k <= 3; ++k) {
    // k of the 3 ranks give +1 (or -k give -1), the rest 0: NCCL adds k terms of ±fl(1/3).
    double nccl = 0;
    for (int j = 0; j < (k < 0 ? -k : k); ++j)
      nccl += (k < 0 ? -1.0 : 1.0) * third;
    const double want = k / 3.0;
    INFO("k = " << k);
    CHECK(pattern_matches(s, pattern_to_double(pattern_from_double<double>(nccl)), want));
    // The old path, through float: off by ~1e-8, far beyond the tolerance.
    if (k % 3 != 0)
      CHECK_FALSE(pattern_matches(s, static_cast<double>(static_cast<float>(nccl)), want));
  }
}

TEST_CASE("device check: the fp64 avg pattern at 5 ranks (values k/5) reads back and matches") {
  // At 3 ranks the pattern's inputs are a permutation of -1, 0, 1 (every avg is 0), so the rows
  // the float path failed were at 5, 7, 10... ranks: run the pattern itself at 5.
  const PatternSpec s = make_pattern(fp64_avg(), 5);
  REQUIRE(s.tolerance > 0);
  REQUIRE(s.tolerance < 1e-15);
  int fractions = 0;
  for (long long i = 0; i < 64; ++i) {
    const double want = pattern_expected(CollOp::all_reduce, s, 0, 0, 64, i);
    const double nccl = nccl_fp64_avg(s, i);
    const double stored = pattern_from_double<double>(nccl);
    CHECK(stored == nccl);
    CHECK(pattern_matches(s, pattern_to_double(stored), want));
    if (want != std::round(want)) {
      ++fractions;
      CHECK_FALSE(pattern_matches(s, static_cast<double>(static_cast<float>(nccl)), want));
    }
  }
  CHECK(fractions > 10);
}

TEST_CASE("device check: every element type round-trips the pattern's small integers") {
  for (double v : {-5.0, -1.0, 0.0, 1.0, 2.0, 5.0, 77.0}) {
    CHECK(pattern_to_double(pattern_from_double<double>(v)) == v);
    CHECK(pattern_to_double(pattern_from_double<float>(v)) == v);
    CHECK(pattern_to_double(pattern_from_double<__half>(v)) == v);
    CHECK(pattern_to_double(pattern_from_double<__nv_bfloat16>(v)) == v);
    if (v != 77.0) CHECK(pattern_to_double(pattern_from_double<__nv_fp8_e4m3>(v)) == v);
    CHECK(pattern_to_double(pattern_from_double<int>(v)) == v);
  }
  // The poison in e4m3 (3 mantissa bits) rounds to 80: still outside every pattern value.
  CHECK(pattern_to_double(pattern_from_double<__nv_fp8_e4m3>(kPatternPoison)) == 80.0);
  // fp32 keeps its own precision: 1/3 rounds to float, not further.
  CHECK(pattern_to_double(pattern_from_double<float>(1.0 / 3)) == static_cast<double>(1.0f / 3.0f));
  // Integers wrap modulo their width, as NCCL's do.
  CHECK(pattern_to_double(pattern_from_double<signed char>(130.0)) == -126.0);
}
