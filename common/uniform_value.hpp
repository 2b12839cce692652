#pragma once
// The value every benchmark input starts from: element i of a buffer filled with `seed` is
// uniform in [-1, 1) and depends only on (seed, i). The device fill (common/cuda/fill.cu) and the
// host fill (common/host_buffer.cpp) both call this one function, so a host check can reproduce
// any element the GPU wrote. Compiled by nvcc as C++17.
#include <cstdint>

#include "common/host_device.hpp"

namespace opbench {

// splitmix64's output function: a good 64-bit mix of its argument (splitmix64(0) =
// 0xE220A8397B1DCDAF, the generator's first output from state 0).
OPBENCH_HD inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// 24 random bits scaled to [-1, 1): exact in fp32, so device and host agree to the bit.
OPBENCH_HD inline float uniform_value(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t r = splitmix64(seed * 0x100000001B3ull + i);
  return static_cast<float>(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace opbench
