#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/host_buffer.hpp"

using namespace opbench;

TEST_CASE("dtype aliases") {
  CHECK(parse_dtype("bf16") == DType::bf16);
  CHECK(parse_dtype("bfloat16") == DType::bf16);
  CHECK(parse_dtype("fp16") == DType::fp16);
  CHECK(parse_dtype("half") == DType::fp16);
  CHECK(parse_dtype("float16") == DType::fp16);
  CHECK(parse_dtype("FP32") == DType::fp32);
  CHECK(parse_dtype("float") == DType::fp32);
  CHECK(parse_dtype("double") == DType::fp64);
  CHECK(parse_dtype("e4m3") == DType::fp8_e4m3);
  CHECK(parse_dtype("fp8") == DType::fp8_e4m3);
  CHECK(dtype_name(DType::fp8_e4m3) == "fp8_e4m3");
  CHECK_THROWS_WITH(parse_dtype("fp12"),
                    Catch::Contains("unknown dtype 'fp12'") && Catch::Contains("bf16"));
  CHECK(parse_dtype_list("bf16, fp16") == std::vector<DType>{DType::bf16, DType::fp16});
  // An alias of a dtype listed before it would run the same cases twice: refused.
  CHECK_THROWS_WITH(parse_dtype_list("bf16, bfloat16,fp16", "--dtype"),
                    Catch::Contains("--dtype: 'bfloat16' is listed twice"));
}

TEST_CASE("dtype sizes and rounding units") {
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::tf32) == 4);
  CHECK(dtype_size(DType::fp8_e4m3) == 1);
  CHECK(dtype_size(DType::int64) == 8);
  CHECK(unit_roundoff(DType::fp32) == std::ldexp(1.0, -24));
  CHECK(unit_roundoff(DType::bf16) == std::ldexp(1.0, -8));
  CHECK(unit_roundoff(DType::fp16) == std::ldexp(1.0, -11));
  CHECK(unit_roundoff(DType::tf32) == std::ldexp(1.0, -11));
  CHECK(unit_roundoff(DType::int32) == 0.0);
}

TEST_CASE("16-bit conversions are exact on known bit patterns") {
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_float(0xC000) == -2.0f);
  CHECK(float_to_bf16(1.00390625f) == 0x3F80);  // 1 + 2^-8 is a tie: rounds to even (1.0)
  CHECK(float_to_bf16(1.01171875f) == 0x3F82);  // 1 + 3·2^-8 is a tie: rounds to even (1 + 2^-6)
  CHECK(float_to_fp16(1.0f) == 0x3C00);
  CHECK(float_to_fp16(65504.0f) == 0x7BFF);
  CHECK(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_fp16(-0.5f) == 0xB800);
  CHECK(fp16_to_float(0x7BFF) == 65504.0f);
  CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(fp16_to_float(0x7C00)));
  for (float v : {0.1f, -3.75f, 1000.5f, 1e-4f})
    CHECK(fp16_to_float(float_to_fp16(v)) == Approx(v).epsilon(1e-3));
  // 1e-5 is subnormal in fp16: the nearest multiple of 2^-24 is 168 · 2^-24.
  CHECK(float_to_fp16(1e-5f) == 168);
}

TEST_CASE("fp8 decodings") {
  CHECK(fp8_e4m3_to_float(0x7E) == 448.0f);  // largest e4m3
  CHECK(fp8_e4m3_to_float(0x38) == 1.0f);
  CHECK(fp8_e4m3_to_float(0x01) == std::ldexp(1.0f, -9));
  CHECK(fp8_e4m3_to_float(0xB8) == -1.0f);
  CHECK(std::isnan(fp8_e4m3_to_float(0x7F)));
  CHECK(fp8_e5m2_to_float(0x3C) == 1.0f);
  CHECK(fp8_e5m2_to_float(0x7B) == 57344.0f);  // largest e5m2
}

TEST_CASE("fp8 encodings round to nearest even and round-trip every code") {
  CHECK(float_to_fp8_e4m3(1.0f) == 0x38);
  CHECK(float_to_fp8_e4m3(448.0f) == 0x7E);
  CHECK(float_to_fp8_e4m3(1000.0f) == 0x7E);  // saturates
  CHECK(float_to_fp8_e4m3(-5.0f) == 0xCA);  // -1.25·2^2: sign 1, exponent 2+7 = 1001, mantissa 010
  CHECK(float_to_fp8_e4m3(1.0625f) == 0x38);  // halfway between 1 and 1.125: to even
  CHECK(float_to_fp8_e5m2(1.0f) == 0x3C);
  CHECK(float_to_fp8_e5m2(-3.0f) == 0xC2);
  for (int b = 0; b < 256; ++b) {
    auto u = static_cast<std::uint8_t>(b);
    float e4 = fp8_e4m3_to_float(u);
    if (!std::isnan(e4)) CHECK(fp8_e4m3_to_float(float_to_fp8_e4m3(e4)) == e4);
    float e5 = fp8_e5m2_to_float(u);
    if (std::isfinite(e5)) CHECK(fp8_e5m2_to_float(float_to_fp8_e5m2(e5)) == e5);
  }
}

TEST_CASE("store_from_double and element_as_double agree") {
  unsigned char buffer[64] = {};
  for (DType t : {DType::fp64, DType::fp32, DType::fp16, DType::bf16, DType::fp8_e4m3,
                  DType::fp8_e5m2, DType::int8, DType::uint8, DType::int32, DType::int64}) {
    store_from_double(buffer, t, 3, 5.0);
    CHECK(element_as_double(buffer, t, 3) == 5.0);
    if (t != DType::uint8) {
      store_from_double(buffer, t, 2, -3.0);
      CHECK(element_as_double(buffer, t, 2) == -3.0);
    }
  }
  store_from_double(buffer, DType::int8, 0, 130.0);  // wraps like the hardware: 130 - 256
  CHECK(element_as_double(buffer, DType::int8, 0) == -126.0);
}

TEST_CASE("the host fill gives every element its own value, in parallel slices too") {
  // Over 1M elements the fill splits across threads; slice edges must not shift any value.
  const std::size_t count = (3u << 20) + 7;
  std::vector<float> v(count);
  fill_uniform_host(v.data(), count, DType::fp32, 42);
  for (std::size_t i :
       {std::size_t{0}, std::size_t{1} << 20, (std::size_t{3} << 19) + 1, count / 2, count - 1})
    CHECK(v[i] == uniform_value(42, i));
  for (float x : v)
    REQUIRE((x >= -1.0f && x < 1.0f));
}

TEST_CASE("the fill value the device and host share, by hand") {
  // splitmix64's first output from state 0 is the published 0xE220A8397B1DCDAF.
  CHECK(splitmix64(0) == 0xE220A8397B1DCDAFull);
  // uniform_value(0, 0): the top 24 bits of that, 0xE220A8 = 14819496, scaled to [-1, 1).
  CHECK(uniform_value(0, 0) == Approx(14819496.0 * 2.0 / 16777216.0 - 1.0).epsilon(1e-7));
}
