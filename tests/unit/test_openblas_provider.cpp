#include <catch2/catch.hpp>

#include "common/dtype.hpp"
#include "gemm/provider.hpp"
#include "tests/unit/quick_measure.hpp"

using namespace opbench;

TEST_CASE("the OpenBLAS provider measures and verifies an fp32 and an fp64 GEMM") {
  auto provider = make_openblas_provider();
  CHECK(provider->backend() == "cpu");
  const auto o = testing::quick_checked<GemmRunOptions>();
  for (DType t : {DType::fp32, DType::fp64}) {
    GemmProblem p{96, 80, 112, 2, true, false, t, t, false};
    auto r = provider->run(p, o);
    INFO(dtype_name(t) << " " << r.note);
    CHECK(r.status == Status::ok);
    CHECK(r.measurement.samples_us.size() >= 3);
    CHECK(r.measurement.stats.mean > 0);
    REQUIRE(r.check);
    CHECK(r.check->passed);
    CHECK(r.cache == "rotate");
    // Whole sets of the 2 products' A (96 x 112), B (112 x 80) and C (96 x 80): 2 x 27,392
    // elements, 219,136 bytes a set in fp32, and more than one set (they rotate).
    const std::int64_t set =
        2 * (96 * 112 + 112 * 80 + 96 * 80) * static_cast<std::int64_t>(dtype_size(t));
    CHECK(r.working_set_bytes % set == 0);
    CHECK(r.working_set_bytes >= 2 * set);
  }
}

TEST_CASE("the OpenBLAS provider says why it cannot run bf16, and that no provider runs int64") {
  auto provider = make_openblas_provider();
  auto why = provider->unsupported(DType::bf16);
  REQUIRE(why);
  CHECK(*why == "the OpenBLAS provider runs fp32 and fp64; bf16 needs --backend cuda");
  CHECK_FALSE(provider->unsupported(DType::fp32));
  // an integer product (a converted trace's aten::mm of int64): cuBLASLt runs none either, where
  // the row said "int64 needs --backend cuda"
  why = provider->unsupported(DType::int64);
  REQUIRE(why);
  CHECK(*why ==
        "the OpenBLAS provider runs fp32 and fp64, and no provider runs int64 GEMMs "
        "(cuBLASLt's are floating-point too)");
}
