#include "common/dtype.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
  int mantissa_bits;  // explicit mantissa bits; -1 for integers
  std::array<std::string_view, 5> aliases;
};

constexpr std::array<DTypeInfo, 13> kTypes{{
    {DType::fp64, "fp64", 8, 52, {"float64", "double", "f64"}},
    {DType::fp32, "fp32", 4, 23, {"float32", "float", "f32"}},
    {DType::tf32, "tf32", 4, 10, {"tensorfloat32"}},
    {DType::fp16, "fp16", 2, 10, {"half", "float16", "f16"}},
    {DType::bf16, "bf16", 2, 7, {"bfloat16"}},
    {DType::fp8_e4m3, "fp8_e4m3", 1, 3, {"fp8", "e4m3", "float8_e4m3fn", "fp8e4m3", "float8_e4m3"}},
    {DType::fp8_e5m2, "fp8_e5m2", 1, 2, {"e5m2", "float8_e5m2", "fp8e5m2"}},
    {DType::int8, "int8", 1, -1, {"i8", "char"}},
    {DType::uint8, "uint8", 1, -1, {"u8"}},
    {DType::int32, "int32", 4, -1, {"i32", "int"}},
    {DType::int64, "int64", 8, -1, {"i64", "long"}},
    {DType::uint32, "uint32", 4, -1, {"u32", "unsigned"}},
    {DType::uint64, "uint64", 8, -1, {"u64"}},
}};

const DTypeInfo& info(DType t) {
  return *std::find_if(kTypes.begin(), kTypes.end(),
                       [t](const DTypeInfo& i) { return i.type == t; });
}

}  // namespace

std::string_view dtype_name(DType t) {
  return info(t).name;
}
std::size_t dtype_size(DType t) {
  return info(t).size;
}
bool is_floating(DType t) {
  return info(t).mantissa_bits >= 0;
}

double unit_roundoff(DType t) {
  int bits = info(t).mantissa_bits;
  return bits < 0 ? 0.0 : std::ldexp(1.0, -(bits + 1));
}

std::string accepted_dtype_names() {
  std::string out;
  for (const auto& i : kTypes) {
    if (!out.empty()) out += ", ";
    out += i.name;
  }
  return out;
}

DType parse_dtype(std::string_view text) {
  std::string key = to_lower(trim(text));
  for (const auto& i : kTypes) {
    if (key == i.name) return i.type;
    for (auto alias : i.aliases)
      if (!alias.empty() && key == alias) return i.type;
  }
  throw bad_input(fmt::format("unknown dtype '{}' (accepted: {})", text, accepted_dtype_names()));
}

std::vector<DType> parse_dtype_list(std::string_view comma_separated, std::string_view what) {
  std::vector<DType> out;
  for (const auto& item : split(comma_separated, ',')) {
    DType t;
    try {
      t = parse_dtype(item);
    } catch (const Error& e) {
      throw bad_input(fmt::format("{}: {}", what, e.what()));
    }
    push_once(out, t, what, item);
  }
  if (out.empty()) throw bad_input(fmt::format("{}: empty dtype list", what));
  return out;
}

float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bf16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(u >> 16);
}

float fp16_to_float(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1F;
  std::uint32_t mant = h & 0x3FFu;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(mant), -24);  // subnormal
  } else if (exp == 31) {
    magnitude =
        mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
  }
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

namespace {
// A finite magnitude within range, as the exponent and mantissa fields of a small float with
// `mant_bits` stored mantissa bits and exponent bias `bias`, rounded to nearest, ties to even.
// A subnormal that rounds up to the smallest normal comes out as exactly its encoding.
std::uint32_t small_float_fields(float a, int mant_bits, int bias) {
  if (a < std::ldexp(1.0f, 1 - bias))  // subnormal: multiples of 2^(1 - bias - mant_bits)
    return static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, mant_bits + bias - 1)));
  int exp;
  const float frac = std::frexp(a, &exp);  // a = frac * 2^exp, frac in [0.5, 1)
  float scaled = std::nearbyint(std::ldexp(frac, mant_bits + 1));  // the significant bits
  if (scaled >= std::ldexp(1.0f, mant_bits + 1)) {
    scaled /= 2.0f;
    ++exp;
  }
  return static_cast<std::uint32_t>(exp - 1 + bias) << mant_bits |
         (static_cast<std::uint32_t>(scaled) & ((1u << mant_bits) - 1));
}
}  // namespace

std::uint16_t float_to_fp16(float value) {
  const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const float a = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7E00;
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to infinity
  return sign | static_cast<std::uint16_t>(small_float_fields(a, 10, 15));
}

float fp8_e4m3_to_float(std::uint8_t b) {
  // OCP e4m3 ("fn"): bias 7, no infinities, S.1111.111 is NaN.
  float sign = (b & 0x80) ? -1.0f : 1.0f;
  int exp = (b >> 3) & 0xF;
  int mant = b & 0x7;
  if (exp == 0xF && mant == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -9);
  return sign * std::ldexp(static_cast<float>(8 + mant), exp - 10);
}

float fp8_e5m2_to_float(std::uint8_t b) {
  // e5m2 is the top byte of an IEEE fp16.
  return fp16_to_float(static_cast<std::uint16_t>(b) << 8);
}

std::uint8_t float_to_fp8_e4m3(float value) {
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float a = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7F;
  if (a >= 464.0f) return sign | 0x7E;  // saturate at 448 (464 would round up past it)
  return sign | static_cast<std::uint8_t>(small_float_fields(a, 3, 7));
}

std::uint8_t float_to_fp8_e5m2(float value) {
  // Round the fp16 encoding to its top byte, ties to even.
  std::uint16_t h = float_to_fp16(value);
  if ((h & 0x7C00) == 0x7C00) return static_cast<std::uint8_t>((h >> 8) | ((h & 0x3FF) ? 0x02 : 0));
  std::uint16_t rounded = static_cast<std::uint16_t>(h + 0x7F + ((h >> 8) & 1));
  return static_cast<std::uint8_t>(rounded >> 8);
}

void store_from_double(void* data, DType t, std::size_t i, double v) {
  auto bytes = static_cast<unsigned char*>(data);
  auto store = [&](auto value) { std::memcpy(bytes + i * sizeof(value), &value, sizeof(value)); };
  switch (t) {
    case DType::fp64:
      return store(v);
    case DType::fp32:
    case DType::tf32:
      return store(static_cast<float>(v));
    case DType::fp16:
      return store(float_to_fp16(static_cast<float>(v)));
    case DType::bf16:
      return store(float_to_bf16(static_cast<float>(v)));
    case DType::fp8_e4m3:
      return store(float_to_fp8_e4m3(static_cast<float>(v)));
    case DType::fp8_e5m2:
      return store(float_to_fp8_e5m2(static_cast<float>(v)));
    case DType::int8:
      return store(static_cast<std::int8_t>(static_cast<std::int64_t>(v)));
    case DType::uint8:
      return store(static_cast<std::uint8_t>(static_cast<std::int64_t>(v)));
    case DType::int32:
      return store(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
    case DType::int64:
      return store(static_cast<std::int64_t>(v));
    case DType::uint32:
      return store(static_cast<std::uint32_t>(static_cast<std::int64_t>(v)));
    case DType::uint64:
      return store(static_cast<std::uint64_t>(static_cast<std::int64_t>(v)));
  }
}

double element_as_double(const void* data, DType t, std::size_t i) {
  auto bytes = static_cast<const unsigned char*>(data);
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, bytes + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (t) {
    case DType::fp64:
      return load(double{});
    case DType::fp32:
    case DType::tf32:
      return load(float{});
    case DType::fp16:
      return fp16_to_float(load(std::uint16_t{}));
    case DType::bf16:
      return bf16_to_float(load(std::uint16_t{}));
    case DType::fp8_e4m3:
      return fp8_e4m3_to_float(bytes[i]);
    case DType::fp8_e5m2:
      return fp8_e5m2_to_float(bytes[i]);
    case DType::int8:
      return static_cast<double>(static_cast<std::int8_t>(bytes[i]));
    case DType::uint8:
      return static_cast<double>(bytes[i]);
    case DType::int32:
      return load(std::int32_t{});
    case DType::int64:
      return static_cast<double>(load(std::int64_t{}));
    case DType::uint32:
      return static_cast<double>(load(std::uint32_t{}));
    case DType::uint64:
      return static_cast<double>(load(std::uint64_t{}));
  }
  return 0.0;
}

bool is_unsigned_integer(DType t) {
  return t == DType::uint8 || t == DType::uint32 || t == DType::uint64;
}

}  // namespace opbench
