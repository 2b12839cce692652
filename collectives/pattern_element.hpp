#pragma once
// How the device check stores a pattern value in an element of the collective's type and reads
// one back (collectives/nccl_pattern.cu), as functions both nvcc and the host compiler build, so a
// host test runs the very conversions the kernels run. CUDA's fp16, bf16 and fp8 headers convert
// on the host too.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "common/host_device.hpp"

namespace opbench {

// double and float take their own branches: the generic one goes through float, which is exact
// for the narrow types (fp8 converts from and to float) but would round an fp64 value — an avg
// expected at k/3 then misses its ~5e-16 tolerance by ~1e-8 and a correct result reads as wrong.
template <typename T>
OPBENCH_HD T pattern_from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<long long>(v));  // wraps modulo the width
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<T, __half>) {
    return __double2half(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __double2bfloat16(v);
  } else {
    return T(static_cast<float>(v));  // fp8: the pattern's small integers are exact in float
  }
}

template <typename T>
OPBENCH_HD double pattern_to_double(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same_v<T, __half>) {
    return static_cast<double>(__half2float(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<double>(__bfloat162float(v));
  } else {
    return static_cast<double>(static_cast<float>(v));  // fp8 widens to float exactly
  }
}

}  // namespace opbench
