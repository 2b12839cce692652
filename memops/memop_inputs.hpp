#pragma once
// The inputs every memops provider gives an operator, so the CPU loops, the CUDA kernels and the
// reference see the same values: the fill seed, the fp8 scale, AdamW's hyperparameters and the
// draw of token ids and targets (a function of (seed, set, i) a device fill reproduces).
#include <cstdint>

#include "common/host_device.hpp"
#include "common/uniform_value.hpp"
#include "memops/memop_math.hpp"

namespace opbench::memop_inputs {

inline constexpr std::uint64_t kSeed = 0x6d656d6f7073;
// Delayed scaling: the scale is 448 over the amax an earlier step saw, here 4 (the inputs are
// uniform in [-4, 4), so x·scale spans e4m3's whole range, subnormals to 448, and never clips).
inline constexpr float kFp8Scale = 448.0f / 4.0f;
// Llama 2's optimizer (lr 3e-4, betas 0.9 and 0.95, weight decay 0.1) at its tenth step, where
// the bias corrections still weigh.
inline constexpr memop_math::AdamWParams kAdamW{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10};
inline constexpr std::int64_t kAlign = 256;  // every operand of every set starts 256-byte aligned

// AdamW's second moment, given the first: at least m squared, as a running mean of g^2 is next to
// one of g, v = (|m| + 1/64)^2. The update m / sqrt(v) then stays under 1, lr-sized, as in
// training (independent random moments would make it as large as the parameters wherever v
// happens to be tiny). Every provider derives v so, on the host or on the device.
OPBENCH_HD inline float adamw_second_moment(float m) {
  const float a = (m < 0.0f ? -m : m) + 0.015625f;
  return a * a;
}

// An integer uniform in [0, range): splitmix64 of (seed, set, i).
OPBENCH_HD inline std::int64_t uniform_index(std::uint64_t seed, std::int64_t set, std::int64_t i,
                                             std::int64_t range) {
  const std::uint64_t r =
      splitmix64(seed * 0x100000001B3ull + static_cast<std::uint64_t>(set) * 0x9E3779B97F4A7C15ull +
                 static_cast<std::uint64_t>(i));
  return static_cast<std::int64_t>(r % static_cast<std::uint64_t>(range));
}

}  // namespace opbench::memop_inputs
