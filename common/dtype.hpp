#pragma once
// Element types, their names and aliases, sizes, rounding units, and host-side conversions of
// the 8- and 16-bit formats (used to verify GPU results on the host).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opbench {

enum class DType {
  fp64,
  fp32,
  tf32,
  fp16,
  bf16,
  fp8_e4m3,
  fp8_e5m2,
  int8,
  uint8,
  int32,
  int64,
  uint32,  // collectives only (nccl-tests' uint32 and uint64)
  uint64
};
// Unsigned integer types (uint8, uint32, uint64).
bool is_unsigned_integer(DType t);

// Canonical short name: "fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", ...
std::string_view dtype_name(DType t);

// Accepts the canonical names and the usual aliases, case-insensitively (bfloat16, half, float16,
// float, float32, double, e4m3, float8_e4m3fn, ...). Throws bad_input listing the accepted names.
DType parse_dtype(std::string_view text);
// `what` names the flag in errors ("--dtype: unknown dtype 'fp12' ...").
std::vector<DType> parse_dtype_list(std::string_view comma_separated,
                                    std::string_view what = "--dtype");
std::string accepted_dtype_names();

// Bytes per element in memory (tf32 is stored as fp32).
std::size_t dtype_size(DType t);
bool is_floating(DType t);

// Unit roundoff u = 2^-(mantissa bits + 1) of the format; 0 for integers.
double unit_roundoff(DType t);

float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);  // round to nearest even
float fp16_to_float(std::uint16_t bits);
std::uint16_t float_to_fp16(float value);  // round to nearest even
float fp8_e4m3_to_float(std::uint8_t bits);
float fp8_e5m2_to_float(std::uint8_t bits);
std::uint8_t float_to_fp8_e4m3(float value);  // round to nearest even, saturating at ±448
std::uint8_t float_to_fp8_e5m2(float value);  // round to nearest even

// Writes `value` as element i of a buffer of type t (integers are rounded toward zero).
void store_from_double(void* data, DType t, std::size_t i, double value);

// Reads element i of a buffer of type t as double (floating types and integers).
double element_as_double(const void* data, DType t, std::size_t i);

}  // namespace opbench
