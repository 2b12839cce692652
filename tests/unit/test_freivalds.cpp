#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "common/dtype.hpp"
#include "gemm/freivalds.hpp"

using namespace opbench;

namespace {

template <class T>
struct Operands {
  std::vector<T> a, b, c;
};

// Random A and B in T stored as `p` says, and C = op(A)·op(B) computed by a plain fp64 loop,
// stored in T (for fp64: exact to fp64 rounding, as OpenBLAS's dgemm gives).
template <class T>
Operands<T> make(const GemmProblem& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> u(-1, 1);
  Operands<T> o{std::vector<T>(p.batch * p.m * p.k), std::vector<T>(p.batch * p.k * p.n),
                std::vector<T>(p.batch * p.m * p.n)};
  for (auto& x : o.a)
    x = u(rng);
  for (auto& x : o.b)
    x = u(rng);
  // Element (i, q) of op(A) and (q, j) of op(B) as strides of the stored matrices.
  const std::int64_t a_i = p.transa ? 1 : p.k, a_q = p.transa ? p.m : 1;
  const std::int64_t b_q = p.transb ? 1 : p.n, b_j = p.transb ? p.k : 1;
  for (std::int64_t t = 0; t < p.batch; ++t) {
    const T* a = o.a.data() + t * p.m * p.k;
    const T* b = o.b.data() + t * p.k * p.n;
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        double s = 0;
        for (std::int64_t q = 0; q < p.k; ++q)
          s +=
              static_cast<double>(a[i * a_i + q * a_q]) * static_cast<double>(b[q * b_q + j * b_j]);
        o.c[t * p.m * p.n + i * p.n + j] = static_cast<T>(s);
      }
  }
  return o;
}

const CheckPrecision kFp32{0.0, std::ldexp(1.0, -24)};

}  // namespace

TEST_CASE("Freivalds passes a correct GEMM in every layout") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmProblem p{37, 29, 53, 2, ta, tb, DType::fp32, DType::fp32, false};
      auto o = make<float>(p, 7);
      auto r = freivalds_check(p, o.a.data(), o.b.data(), o.c.data(), kFp32);
      INFO(p.layout() << " " << r.detail);
      CHECK(r.passed);
      CHECK(r.max_residual < 1e-6);
    }
}

TEST_CASE("Freivalds catches one wrong element, a zeroed result, a transposed result and NaN") {
  GemmProblem p{64, 48, 96, 1, false, true, DType::fp32, DType::fp32, false};
  auto good = make<float>(p, 11);

  auto one_wrong = good;
  one_wrong.c[5 * 48 + 17] += 1.0f;  // |C| is about sqrt(96)/3 = 3.3 here
  CHECK_FALSE(
      freivalds_check(p, one_wrong.a.data(), one_wrong.b.data(), one_wrong.c.data(), kFp32).passed);

  auto zeros = good;
  std::fill(zeros.c.begin(), zeros.c.end(), 0.0f);
  CHECK_FALSE(freivalds_check(p, zeros.a.data(), zeros.b.data(), zeros.c.data(), kFp32).passed);

  GemmProblem sq{32, 32, 40, 1, false, false, DType::fp32, DType::fp32, false};
  auto t = make<float>(sq, 3);
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < i; ++j)
      std::swap(t.c[i * 32 + j], t.c[j * 32 + i]);
  CHECK_FALSE(freivalds_check(sq, t.a.data(), t.b.data(), t.c.data(), kFp32).passed);

  auto nan = good;
  nan.c[0] = std::numeric_limits<float>::quiet_NaN();
  auto r = freivalds_check(p, nan.a.data(), nan.b.data(), nan.c.data(), kFp32);
  CHECK_FALSE(r.passed);
  CHECK_THAT(r.detail, Catch::Contains("NaN"));
}

TEST_CASE("Freivalds accepts bf16 output rounding but not a bf16 result off by a tile") {
  GemmProblem p{48, 40, 256, 1, false, false, DType::fp32, DType::bf16, false};
  auto o = make<float>(p, 5);
  std::vector<std::uint16_t> c16(o.c.size());
  for (std::size_t i = 0; i < c16.size(); ++i)
    c16[i] = float_to_bf16(o.c[i]);
  CHECK(freivalds_check(p, o.a.data(), o.b.data(), c16.data(), kFp32).passed);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      c16[i * 40 + j] = float_to_bf16(0.0f);  // an unwritten 8x8 tile
  CHECK_FALSE(freivalds_check(p, o.a.data(), o.b.data(), c16.data(), kFp32).passed);
}

namespace {

const CheckPrecision kFp64{0.0, std::ldexp(1.0, -53)};

}  // namespace

TEST_CASE(
    "Freivalds passes fp64 results exact to rounding when n >> k, and still fails one bad "
    "element") {
  // Before the check's sums were compensated, 64x65536x128 fp64 failed: its own sums over
  // n = 65536 erred by ~256 u against a tolerance of ~100 u.
  for (auto [m, n, k] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{64, 65536, 128}, {64, 4096, 64}}) {
    GemmProblem p{m, n, k, 1, false, true, DType::fp64, DType::fp64, false};
    auto o = make<double>(p, 3);
    auto r = freivalds_check(p, o.a.data(), o.b.data(), o.c.data(), kFp64);
    INFO(p.dims() << " " << r.detail);
    CHECK(r.passed);
    spoil_element_for_test(o.c.data(), DType::fp64, static_cast<std::size_t>(m * n / 2));
    CHECK_FALSE(freivalds_check(p, o.a.data(), o.b.data(), o.c.data(), kFp64).passed);
  }
}

TEST_CASE(
    "spoil_element_for_test changes one element by 1000 in every output type, and the check sees "
    "it") {
  GemmProblem p{24, 20, 32, 1, false, false, DType::fp32, DType::fp32, false};
  auto o = make<float>(p, 9);
  for (DType out : {DType::fp32, DType::fp16, DType::bf16, DType::fp64}) {
    p.out_dtype = out;
    std::vector<unsigned char> c(o.c.size() * dtype_size(out));
    for (std::size_t i = 0; i < o.c.size(); ++i)
      store_from_double(c.data(), out, i, o.c[i]);
    INFO(dtype_name(out));
    CHECK(freivalds_check(p, o.a.data(), o.b.data(), c.data(), kFp32).passed);
    const double before = element_as_double(c.data(), out, 240);
    spoil_element_for_test(c.data(), out, 240);
    CHECK(element_as_double(c.data(), out, 240) - before == Approx(1000.0).epsilon(0.01));
    CHECK_FALSE(freivalds_check(p, o.a.data(), o.b.data(), c.data(), kFp32).passed);
  }
}

TEST_CASE("a GPU GEMM is held to its inputs' rounding and its accumulator's") {
  CHECK(gemm_check_precision(DType::tf32).input_roundoff == 0x1p-11);  // tf32: 10 stored bits
  CHECK(gemm_check_precision(DType::tf32).accumulate_roundoff == 0x1p-24);
  CHECK(gemm_check_precision(DType::bf16).input_roundoff == 0.0);  // products exact in fp32
  CHECK(gemm_check_precision(DType::bf16).accumulate_roundoff == 0x1p-24);
  CHECK(gemm_check_precision(DType::fp64).accumulate_roundoff == 0x1p-53);
  CHECK(gemm_check_precision(DType::fp8_e4m3).accumulate_roundoff == 0x1p-14);
}
