#pragma once
// Where the rotating operand sets of a GEMM live inside two pools: inputs (A and B of every
// set, filled once with random values and reused across cases) and outputs (C of every set).
#include <cstdint>

#include "common/rotation.hpp"
#include "gemm/gemm_problem.hpp"

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

}  // namespace opbench
