#include "collectives/coll_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace opbench {
namespace {

// Largest integer up to which every integer is representable (floats), or the type's max.
double exact_integer_limit(DType t) {
  switch (t) {
    case DType::fp64:
      return 9007199254740992.0;  // 2^53
    case DType::fp32:
    case DType::tf32:
      return 16777216.0;  // 2^24
    case DType::fp16:
      return 2048.0;
    case DType::bf16:
      return 256.0;
    case DType::fp8_e4m3:
      return 16.0;
    case DType::fp8_e5m2:
      return 8.0;
    case DType::int8:
      return 127.0;
    case DType::uint8:
      return 255.0;
    case DType::int32:
      return 2147483647.0;
    case DType::int64:
      return 9.2e18;
    case DType::uint32:
      return 4294967295.0;
    case DType::uint64:
      return 1.8e19;
  }
  return 1.0;
}

PatternRed pattern_red(RedOp r) {
  switch (r) {
    case RedOp::sum:
      return PatternRed::sum;
    case RedOp::prod:
      return PatternRed::prod;
    case RedOp::min:
      return PatternRed::min;
    case RedOp::max:
      return PatternRed::max;
    case RedOp::avg:
      return PatternRed::avg;
  }
  return PatternRed::sum;
}

// The smallest positive value of a floating type (its smallest subnormal).
double smallest_subnormal(DType t) {
  switch (t) {
    case DType::fp64:
      return std::ldexp(1.0, -1074);
    case DType::fp32:
    case DType::tf32:
      return std::ldexp(1.0, -149);
    case DType::fp16:
      return std::ldexp(1.0, -24);
    case DType::bf16:
      return std::ldexp(1.0, -133);
    case DType::fp8_e4m3:
      return std::ldexp(1.0, -9);
    case DType::fp8_e5m2:
      return std::ldexp(1.0, -16);
    default:
      return 1.0;
  }
}

}  // namespace

PatternSpec make_pattern(const CollCall& call, int nranks) {
  PatternSpec s;
  s.red = is_reduction(call.op) ? pattern_red(call.redop) : PatternRed::sum;
  s.nranks = nranks;
  s.is_integer = !is_floating(call.dtype);
  s.is_unsigned = is_unsigned_integer(call.dtype);
  s.wrap_bits = static_cast<int>(dtype_size(call.dtype) * 8);
  const double limit = exact_integer_limit(call.dtype);
  const bool reduces = is_reduction(call.op);
  // Keep |partial sums| <= limit so that every order of addition is exact; at least ±1.
  const double per_rank =
      reduces ? std::floor(limit / (s.is_unsigned ? 2.0 * nranks : nranks)) : limit;
  s.amplitude = static_cast<int>(std::clamp(per_rank, 1.0, 5.0));
  const bool adds = s.red == PatternRed::sum || s.red == PatternRed::avg;
  if (s.is_integer || !reduces || !adds) return s;  // integers wrap as modelled; min/max/prod exact

  const double u = unit_roundoff(call.dtype), tiny = smallest_subnormal(call.dtype);
  const bool power_of_two = (nranks & (nranks - 1)) == 0;
  if (s.red == PatternRed::sum || (power_of_two && 1.0 / nranks >= tiny)) {
    // Exact: at most limit / amplitude ranks add non-zero values into any element (for avg,
    // x·2^-k is exact too, and so are the sums of those).
    // (limit is up to 2^53 for fp64: capped before the conversion, which would overflow int)
    const int contributors = static_cast<int>(std::min(
        std::floor(limit / s.amplitude), static_cast<double>(std::numeric_limits<int>::max())));
    s.stride = nranks <= contributors ? 1 : (nranks + contributors - 1) / contributors;
    return s;
  }
  // avg with n not a power of two (or 1/n below the type's smallest value): each x·fl(1/n)
  // rounds (2u) and c contributions add with c−1 roundings, so |error| <= (c+2)·u·c·a/n + c·tiny
  // for amplitude a = 1. That must stay under 1/n — one rank's smallest share — or a missing or
  // doubled contribution would pass: keep c (the non-zero contributors) small enough.
  s.amplitude = 1;
  int c = 0;
  while (c < nranks && (c + 3.0) * (c + 1) * u + (c + 1) * nranks * tiny < 1.0)
    ++c;
  if (c == 0) {
    s.verifiable = false;  // no pattern tells a missing share from rounding
    return s;
  }
  s.stride = (nranks + c - 1) / c;
  const int contributors = (nranks + s.stride - 1) / s.stride;
  s.tolerance = (contributors + 2.0) * u * contributors / nranks + contributors * tiny;
  return s;
}

std::optional<std::string> unverifiable_reason(const CollCall& call, const PatternSpec& s) {
  if (s.verifiable) return std::nullopt;
  return fmt::format(
      "#wrong N/A: {} avg over {} ranks cannot be checked — one rank's share (1/{}) is within "
      "the rounding of {}; timed only",
      dtype_name(call.dtype), s.nranks, s.nranks, dtype_name(call.dtype));
}

std::int64_t result_elements(const CollCall& call, int rank, int /*nranks*/) {
  if (call.op == CollOp::reduce && rank != call.root) return 0;
  return call.counts.recv_count;
}

double expected_result(const CollCall& call, const PatternSpec& spec, int rank, int /*nranks*/,
                       std::int64_t j) {
  return pattern_expected(call.op, spec, rank, call.root, call.counts.count, j);
}

}  // namespace opbench
