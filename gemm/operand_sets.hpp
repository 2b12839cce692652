#pragma once
// Where the rotating operand sets of a GEMM live inside two pools: inputs (A and B of every
// set, filled once with random values and reused across cases) and outputs (C of every set).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/rotation.hpp"
#include "gemm/gemm_problem.hpp"
#include "gemm/provider.hpp"

namespace opbench {

struct OperandLayout {
  static constexpr std::int64_t kAlign = 256;          // every matrix starts 256-byte aligned
  std::int64_t a_bytes = 0, b_bytes = 0, c_bytes = 0;  // all batch entries
  std::int64_t input_stride = 0;                       // bytes from one set's A to the next set's A
  std::int64_t output_stride = 0;                      // bytes from one set's C to the next set's C

  explicit OperandLayout(const GemmProblem& p)
      : a_bytes(p.batch * p.a_elements() * static_cast<std::int64_t>(dtype_size(p.dtype))),
        b_bytes(p.batch * p.b_elements() * static_cast<std::int64_t>(dtype_size(p.dtype))),
        c_bytes(p.batch * p.c_elements() * static_cast<std::int64_t>(dtype_size(p.out_dtype))),
        input_stride(align_up(a_bytes, kAlign) + align_up(b_bytes, kAlign)),
        output_stride(align_up(c_bytes, kAlign)) {}

  std::int64_t set_bytes() const { return input_stride + output_stride; }
  std::int64_t a_offset(std::int64_t set) const { return set * input_stride; }
  std::int64_t b_offset(std::int64_t set) const {
    return set * input_stride + align_up(a_bytes, kAlign);
  }
  std::int64_t c_offset(std::int64_t set) const { return set * output_stride; }
};

// The same for the experts of a grouped GEMM: one set holds every expert's A and B (inputs) and
// C (outputs), each 256-byte aligned, expert after expert.
struct ExpertOperandLayout {
  std::vector<std::int64_t> a_at, b_at, c_at;  // offsets inside one set's inputs / outputs
  std::int64_t input_stride = 0, output_stride = 0;

  explicit ExpertOperandLayout(const std::vector<GemmProblem>& experts) {
    for (const auto& p : experts) {
      const OperandLayout one(p);
      a_at.push_back(input_stride);
      b_at.push_back(input_stride + align_up(one.a_bytes, OperandLayout::kAlign));
      c_at.push_back(output_stride);
      input_stride += one.input_stride;
      output_stride += one.output_stride;
    }
  }
  std::int64_t set_bytes() const { return input_stride + output_stride; }
};

// How many operand sets a run rotates over: enough to touch 4x `cache_bytes`, or one with --cold
// (the cache is flushed instead). When not even one set fits in `budget` bytes of `memory`
// ("host memory", "device memory"), `result` becomes a skipped row naming the bytes needed.
inline std::optional<RotationPlan> plan_operand_sets(std::int64_t set_bytes,
                                                     const GemmRunOptions& o,
                                                     std::uint64_t cache_bytes,
                                                     std::uint64_t budget, const char* memory,
                                                     GemmResult& result) {
  return plan_or_skip(
      plan_operand_rotation(set_bytes, set_bytes, o.cold, cache_bytes,
                            static_cast<std::int64_t>(std::min<std::uint64_t>(budget, INT64_MAX)),
                            memory),
      result);
}

}  // namespace opbench
