#pragma once
// The data a collective is verified with (-c), usable from host and device code: every rank
// fills its input with small integers that depend on (rank, element), chosen so that any
// reduction over the ranks is exact in the dtype whatever order the library adds in — so the
// expected result is known exactly and a single wrong element is caught. Where more ranks add
// into an element than the dtype can sum exactly (fp8, bf16 and fp16 at many ranks), the pattern
// is sparse: only every `stride`-th rank gives an element a non-zero value, so the sums stay
// exact. Results are what NCCL computes: integers wrap in their width, integer avg is the wrapped
// sum divided by n truncating toward zero (NCCL's SumPostDiv), float avg is Σ x·(1/n) (NCCL's
// PreMulSum) — exact when n is a power of two, else within a bound from its rounding.
#include "common/coll_formulas.hpp"  // CollOp: standard headers only, fine for nvcc
#include "common/host_device.hpp"

namespace opbench {

enum class PatternRed { sum, prod, min, max, avg };

struct PatternSpec {
  PatternRed red = PatternRed::sum;
  int nranks = 1;
  int amplitude = 1;  // inputs lie in [-amplitude, amplitude] ([0, 2·amplitude] unsigned)
  bool is_unsigned = false;
  bool is_integer = false;
  int wrap_bits = 0;  // integers: results wrap modulo 2^wrap_bits, as the hardware does
  int stride = 1;     // sparse: rank r gives element i a non-zero value only if (r+i) % stride == 0
  double tolerance = 0;    // floats: allowed |result - expected| (0: exact)
  bool verifiable = true;  // false: no pattern tells a wrong result from rounding (not checked)
};

// A 64-bit mix of (rank, element) (splitmix64's finaliser, applied to the rank and then to the
// rank's value plus the element): the values taken from it modulo 11 or less have no period in
// either. The linear key 31 rank + 17 i it replaces repeated every 11 ranks and every 11
// elements, so that ranks 11 apart sent the same data (a swapped peer passed the check) and a
// reduce_scatter whose count was a multiple of 11 expected the same block on every rank.
OPBENCH_HD inline unsigned long long pattern_mix(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Input element i of `rank`.
OPBENCH_HD inline double pattern_input(const PatternSpec& s, int rank, long long i) {
  const unsigned long long key = pattern_mix(pattern_mix(static_cast<unsigned long long>(rank)) +
                                             static_cast<unsigned long long>(i));
  if (s.red == PatternRed::prod) {
    if (s.is_unsigned) return (key % 5ull == 0) ? 2.0 : 1.0;
    return (key % 3ull == 0) ? -1.0 : 1.0;
  }
  if (s.stride > 1 && (static_cast<unsigned long long>(rank) + static_cast<unsigned long long>(i)) %
                              static_cast<unsigned long long>(s.stride) !=
                          0)
    return 0;
  const unsigned long long span = 2ull * static_cast<unsigned long long>(s.amplitude) + 1ull;
  double v = static_cast<double>(key % span);
  return s.is_unsigned ? v : v - s.amplitude;
}

// Wraps an integer result to the dtype's width, as two's complement arithmetic does.
OPBENCH_HD inline double pattern_wrap(const PatternSpec& s, long long v) {
  if (!s.is_integer || s.wrap_bits >= 64) return static_cast<double>(v);
  unsigned long long mask = (1ull << s.wrap_bits) - 1ull;
  unsigned long long u = static_cast<unsigned long long>(v) & mask;
  if (!s.is_unsigned && (u >> (s.wrap_bits - 1)) & 1ull)
    return static_cast<double>(static_cast<long long>(u) - static_cast<long long>(mask) - 1);
  return static_cast<double>(u);
}

// One step of a reduction: integers wrap as two's complement does (the sum and product go
// through unsigned arithmetic, where overflow is defined); floats are exact in double here.
OPBENCH_HD inline long long pattern_combine(PatternRed red, long long acc, long long v) {
  const auto a = static_cast<unsigned long long>(acc), b = static_cast<unsigned long long>(v);
  switch (red) {
    case PatternRed::prod:
      return static_cast<long long>(a * b);
    case PatternRed::min:
      return v < acc ? v : acc;
    case PatternRed::max:
      return v > acc ? v : acc;
    default:  // sum, avg
      return static_cast<long long>(a + b);
  }
}
OPBENCH_HD inline double pattern_combine(PatternRed red, double acc, double v) {
  switch (red) {
    case PatternRed::prod:
      return acc * v;
    case PatternRed::min:
      return v < acc ? v : acc;
    case PatternRed::max:
      return v > acc ? v : acc;
    default:  // sum, avg
      return acc + v;
  }
}

// Element i of every rank's input folded by the reduction, in T (long long or double).
template <class T>
OPBENCH_HD T pattern_fold(const PatternSpec& s, long long i) {
  T acc = static_cast<T>(pattern_input(s, 0, i));
  for (int r = 1; r < s.nranks; ++r)
    acc = pattern_combine(s.red, acc, static_cast<T>(pattern_input(s, r, i)));
  return acc;
}

// Element i reduced over every rank.
OPBENCH_HD inline double pattern_reduced(const PatternSpec& s, long long i) {
  if (s.is_integer) {
    const double wrapped = pattern_wrap(s, pattern_fold<long long>(s, i));
    // NCCL's integer avg: the wrapped sum, divided by n truncating toward zero.
    if (s.red == PatternRed::avg)
      return static_cast<double>(static_cast<long long>(wrapped) /
                                 static_cast<long long>(s.nranks));
    return wrapped;
  }
  // Floats: exact in double (the inputs are small integers), and exact in the dtype too except
  // avg with n not a power of two, which the tolerance covers.
  const double acc = pattern_fold<double>(s, i);
  return s.red == PatternRed::avg ? acc / s.nranks : acc;
}

// Expected element j of `rank`'s result; `count` is the op's per-rank (per-peer) count.
OPBENCH_HD inline double pattern_expected(CollOp op, const PatternSpec& s, int rank, int root,
                                          long long count, long long j) {
  switch (op) {
    case CollOp::all_reduce:
    case CollOp::reduce:
      return pattern_reduced(s, j);
    case CollOp::reduce_scatter:
      return pattern_reduced(s, rank * count + j);
    case CollOp::all_gather:
      return pattern_input(s, static_cast<int>(j / count), j % count);
    case CollOp::all_to_all:  // block p came from peer p, which sent its block `rank`
      return pattern_input(s, static_cast<int>(j / count), rank * count + j % count);
    case CollOp::broadcast:
      return pattern_input(s, root, j);
    case CollOp::send_recv:
      return pattern_input(s, (rank - 1 + s.nranks) % s.nranks, j);
  }
  return 0;
}

// What a poisoned result element holds before the op writes it: outside every pattern value.
constexpr double kPatternPoison = 77;

OPBENCH_HD inline bool pattern_matches(const PatternSpec& s, double got, double expected) {
  double d = got - expected;
  if (d < 0) d = -d;
  return d <= s.tolerance;  // NaN compares false: wrong
}

}  // namespace opbench
