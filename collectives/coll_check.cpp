#include "collectives/coll_check.hpp"

#include <algorithm>
#include <cmath>

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

}  // namespace

PatternSpec make_pattern(const CollCall& call, int nranks) {
  PatternSpec s;
  s.red = is_reduction(call.op) ? pattern_red(call.redop) : PatternRed::sum;
  s.nranks = nranks;
  s.is_integer = !is_floating(call.dtype);
  s.is_unsigned = call.dtype == DType::uint8;
  s.wrap_bits = static_cast<int>(dtype_size(call.dtype) * 8);
  const double limit = exact_integer_limit(call.dtype);
  // Keep |partial sums| <= limit so that every order of addition is exact; at least ±1.
  const bool reduces = is_reduction(call.op);
  const double per_rank =
      reduces ? std::floor(limit / (s.is_unsigned ? 2.0 * nranks : nranks)) : limit;
  s.amplitude = static_cast<int>(std::clamp(per_rank, 1.0, 5.0));
  if (!s.is_integer) {
    const double u = unit_roundoff(call.dtype);
    const double worst = static_cast<double>(nranks) * s.amplitude;
    if (reduces && s.red == PatternRed::avg)
      s.tolerance = 4 * u * (s.amplitude + 1);  // avg rounds: NCCL pre-scales by 1/n
    else if (reduces && s.red == PatternRed::sum && worst > limit)
      s.tolerance = 2 * u * worst;  // too many ranks for exact partial sums in this type
  }
  return s;
}

std::int64_t result_elements(const CollCall& call, int rank, int /*nranks*/) {
  if (call.op == CollOp::reduce && rank != call.root) return 0;
  return call.counts.recv_count;
}

PatternOp pattern_op(CollOp op) {
  switch (op) {
    case CollOp::all_reduce:
      return PatternOp::all_reduce;
    case CollOp::all_gather:
      return PatternOp::all_gather;
    case CollOp::reduce_scatter:
      return PatternOp::reduce_scatter;
    case CollOp::all_to_all:
      return PatternOp::all_to_all;
    case CollOp::broadcast:
      return PatternOp::broadcast;
    case CollOp::reduce:
      return PatternOp::reduce;
    case CollOp::send_recv:
      return PatternOp::send_recv;
  }
  return PatternOp::all_reduce;
}

double expected_result(const CollCall& call, const PatternSpec& spec, int rank, int /*nranks*/,
                       std::int64_t j) {
  return pattern_expected(pattern_op(call.op), spec, rank, call.root, call.counts.count, j);
}

}  // namespace opbench
