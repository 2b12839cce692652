#pragma once
// Integer rounding shared by the plans, the memory model and the kernels' task splits (it was
// written locally in five files).
#include <cstdint>

namespace opbench {

// ⌈a / b⌉ for a >= 0, b > 0.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// `value` rounded up to a multiple of `alignment` (> 0).
constexpr std::int64_t align_up(std::int64_t value, std::int64_t alignment) {
  return ceil_div(value, alignment) * alignment;
}

}  // namespace opbench
