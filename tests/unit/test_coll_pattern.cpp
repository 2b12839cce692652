// The collectives' check, for every op x dtype x reduction at n = 2, 3, 4, 8, 16, 64 and 1024
// ranks: the expected value (pattern_expected, what the device check and the host check both
// use) against NCCL's arithmetic simulated in the dtype itself — integers wrapping in their width,
// integer avg as the wrapped sum divided by n truncating toward zero (SumPostDiv), float avg as
// Σ fl(x·fl(1/n)) (PreMulSum), every addition rounded to the dtype in two orders. The tolerance
// must cover that rounding, be 0 where the result is exact, and stay below one rank's smallest
// share, so a missing or doubled contribution fails.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "coll_call.hpp"
#include "collectives/coll_check.hpp"
#include "common/dtype.hpp"

using namespace opbench;
using opbench::testing::coll_call;

namespace {

// v rounded to the dtype (floats) or wrapped to its width (integers).
double in_dtype(DType t, double v) {
  unsigned char buffer[8] = {};
  store_from_double(buffer, t, 0, v);
  return element_as_double(buffer, t, 0);
}

double wrap_integer(DType t, long long v) {
  const int bits = static_cast<int>(dtype_size(t) * 8);
  if (bits >= 64) return static_cast<double>(v);
  const unsigned long long mask = (1ull << bits) - 1;
  unsigned long long u = static_cast<unsigned long long>(v) & mask;
  if (!is_unsigned_integer(t) && ((u >> (bits - 1)) & 1))
    return static_cast<double>(static_cast<long long>(u) - static_cast<long long>(mask) - 1);
  return static_cast<double>(u);
}

// term(0) combined with term(1) .. term(n - 1) in turn under `red`; add and mul round as the
// dtype does (NCCL reduces in the element type).
template <class T, class Term, class Add, class Mul>
T fold(PatternRed red, int n, Term term, Add add, Mul mul) {
  T acc = term(0);
  for (int k = 1; k < n; ++k) {
    const T v = term(k);
    switch (red) {
      case PatternRed::sum:
      case PatternRed::avg:
        acc = add(acc, v);
        break;
      case PatternRed::prod:
        acc = mul(acc, v);
        break;
      case PatternRed::min:
        acc = std::min(acc, v);
        break;
      case PatternRed::max:
        acc = std::max(acc, v);
        break;
    }
  }
  return acc;
}

// NCCL's result for element i, the ranks taken in `order` (0: 0..n-1, 1: n-1..0).
double simulate(const CollCall& call, const PatternSpec& s, long long i, int order) {
  const int n = s.nranks;
  const DType t = call.dtype;
  auto input = [&](int k) { return pattern_input(s, order == 0 ? k : n - 1 - k, i); };
  if (s.is_integer) {
    using ull = unsigned long long;
    auto wrap = [&](long long v) { return static_cast<long long>(wrap_integer(t, v)); };
    const long long acc = fold<long long>(
        s.red, n, [&](int k) { return static_cast<long long>(input(k)); },
        [&](long long x, long long y) { return wrap(x + y); },
        [&](long long x, long long y) {
          return wrap(static_cast<long long>(static_cast<ull>(x) * static_cast<ull>(y)));
        });
    return s.red == PatternRed::avg ? static_cast<double>(acc / n) : static_cast<double>(acc);
  }
  const double scale = in_dtype(t, 1.0 / n);
  return fold<double>(
      s.red, n,
      [&](int k) {
        return s.red == PatternRed::avg ? in_dtype(t, in_dtype(t, input(k)) * scale)
                                        : in_dtype(t, input(k));
      },
      [&](double x, double y) { return in_dtype(t, x + y); },
      [&](double x, double y) { return in_dtype(t, x * y); });
}

}  // namespace

TEST_CASE(
    "collective checks: expected values and tolerances for every op, dtype, reduction and n") {
  const std::vector<DType> dtypes{DType::fp64,     DType::fp32,     DType::fp16,   DType::bf16,
                                  DType::fp8_e4m3, DType::fp8_e5m2, DType::int8,   DType::uint8,
                                  DType::int32,    DType::int64,    DType::uint32, DType::uint64};
  int checked = 0, exact = 0, unverifiable = 0;
  for (CollOp op : all_coll_ops())
    for (DType t : dtypes)
      for (RedOp red : is_reduction(op) ? std::vector<RedOp>{RedOp::sum, RedOp::prod, RedOp::min,
                                                             RedOp::max, RedOp::avg}
                                        : std::vector<RedOp>{RedOp::sum})
        for (int n : {2, 3, 4, 8, 16, 64, 1024}) {
          CollCall call = coll_call(op, t, red, 1 << 20, n);
          const PatternSpec s = make_pattern(call, n);
          INFO(coll_op_name(op) << " " << dtype_name(t) << " " << red_op_name(red) << " n " << n);
          if (!s.verifiable) {
            // Only a float avg whose 1/n share sinks into the type's rounding, and it says so.
            CHECK((red == RedOp::avg && is_floating(t)));
            CHECK(unverifiable_reason(call, s));
            ++unverifiable;
            continue;
          }
          CHECK_FALSE(unverifiable_reason(call, s));
          const int rank = n - 1;
          for (long long j = 0; j < 24; ++j) {
            const double want = expected_result(call, s, rank, n, j);
            if (is_reduction(op)) {
              const long long i = op == CollOp::reduce_scatter ? rank * call.counts.count + j : j;
              for (int order : {0, 1}) {
                const double got = simulate(call, s, i, order);
                REQUIRE(pattern_matches(s, got, want));
              }
            } else {
              REQUIRE(in_dtype(t, want) == want);  // inputs are exact in the dtype
            }
            // A missing or extra share of one rank must fail (integer avg loses it to the
            // truncating division, and prod shares are factors: both left out here).
            if (red != RedOp::prod && !(red == RedOp::avg && !is_floating(t))) {
              const double share = red == RedOp::avg ? 1.0 / n : 1.0;
              REQUIRE_FALSE(pattern_matches(s, want + share, want));
              REQUIRE_FALSE(pattern_matches(s, want - share, want));
            }
            if (want != kPatternPoison) REQUIRE_FALSE(pattern_matches(s, kPatternPoison, want));
          }
          ++checked;
          exact += s.tolerance == 0;
        }
  // Every float sum is exact now (a sparse pattern where ranks outnumber the exact range), and
  // so is avg at a power of two.
  CHECK(checked > 1000);
  CHECK(exact > checked * 9 / 10);
  CHECK(unverifiable <= 4);
}

TEST_CASE("integer avg is NCCL's wrapped sum divided by n, truncating toward zero") {
  CollCall call = coll_call(CollOp::all_reduce, DType::int32, RedOp::avg, 64, 3);
  const PatternSpec s = make_pattern(call, 3);
  // -7 / 3 is -2 (toward zero), not -3 (floor): the elements must include such a sum.
  bool negative_inexact = false;
  for (long long i = 0; i < 64; ++i) {
    long long sum = 0;
    for (int r = 0; r < 3; ++r)
      sum += static_cast<long long>(pattern_input(s, r, i));
    CHECK(pattern_reduced(s, i) == static_cast<double>(sum / 3));  // C++ division truncates
    negative_inexact |= sum < 0 && sum % 3 != 0;
  }
  CHECK(negative_inexact);
}

TEST_CASE("fp8 avg at 8 ranks is exact, and a missing rank's share fails it") {
  CollCall call = coll_call(CollOp::all_reduce, DType::fp8_e4m3, RedOp::avg, 64, 8);
  const PatternSpec s = make_pattern(call, 8);
  CHECK(s.tolerance == 0);  // x·2^-3 and its sums are exact in e4m3
  CHECK_FALSE(pattern_matches(s, pattern_reduced(s, 5) + 1.0 / 8, pattern_reduced(s, 5)));
  call.op = CollOp::all_reduce;
  const PatternSpec three = make_pattern(call, 3);
  CHECK(three.tolerance > 0);
  CHECK(three.tolerance < 1.0 / 3);  // below one rank's smallest share
}

TEST_CASE("no two ranks send the same data, and reduce_scatter's blocks differ at any count") {
  // The linear key 31 rank + 17 i modulo 11 (amplitude 5) repeated every 11 ranks and every 11
  // elements: ranks 0 and 11 sent the same data, so a swapped peer in all_gather or all_to_all
  // passed the check, and a reduce_scatter whose per-rank count was a multiple of 11 (Qwen2.5
  // 72B's FSDP2 MLP unit at 8 ranks: 90,832,896) expected the same block on every rank.
  const PatternSpec s =
      make_pattern(coll_call(CollOp::all_gather, DType::fp32, RedOp::sum, 1 << 20, 64), 64);
  REQUIRE(s.amplitude == 5);
  std::vector<std::vector<double>> sent;
  for (int r = 0; r < 64; ++r) {
    std::vector<double> v;
    for (long long i = 0; i < 64; ++i)
      v.push_back(pattern_input(s, r, i));
    for (const auto& other : sent)
      CHECK(v != other);
    sent.push_back(v);
  }
  const PatternSpec rs =
      make_pattern(coll_call(CollOp::reduce_scatter, DType::fp32, RedOp::sum, 1 << 20, 8), 8);
  const long long count = 88;  // 8 x 11
  for (int p = 1; p < 8; ++p) {
    bool differs = false;
    for (long long j = 0; j < count; ++j)
      differs = differs || pattern_expected(CollOp::reduce_scatter, rs, 0, 0, count, j) !=
                               pattern_expected(CollOp::reduce_scatter, rs, p, 0, count, j);
    CHECK(differs);
  }
}
