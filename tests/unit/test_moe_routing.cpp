// MoE routing: counts a person can check by hand (docs/formulas.md, "MoE routing").
#include <catch2/catch.hpp>

#include <numeric>

#include "common/error.hpp"
#include "gemm/moe_routing.hpp"
#include "temp_files.hpp"

using namespace opbench;
using Counts = std::vector<std::int64_t>;

namespace {
// E = 8 experts, top_k = 2, an EP group of N = 2 ranks, T = 100 tokens per rank:
// A = 2 x 100 x 2 = 400 assignments, and no expert above N x T = 200.
Counts route(const std::string& routing) {
  return route_tokens(parse_routing(routing), 8, 2, 2, 100);
}
}  // namespace

TEST_CASE("balanced routing: A / E each, the remainder from expert 1") {
  CHECK(route("balanced") == Counts(8, 50));
  CHECK(route_tokens(parse_routing("balanced"), 8, 1, 1, 13) == Counts{2, 2, 2, 2, 2, 1, 1, 1});
}

TEST_CASE("zipf:1.0: A x (1/i) / H_8 rounded by largest remainder, summing to A exactly") {
  // 400 / H_8 (2.717857) = 147.17, 73.59, 49.06, 36.79, 29.43, 24.53, 21.02, 18.40: the floors
  // sum to 397, and the three largest fractions (.79, .59, .53) get one more each.
  const Counts c = route("zipf:1.0");
  CHECK(c == Counts{147, 74, 49, 37, 29, 25, 21, 18});
  CHECK(std::accumulate(c.begin(), c.end(), std::int64_t{0}) == 400);
}

TEST_CASE("zipf:3.0: an expert above N x T passes its excess on to the next") {
  // Unbounded, expert 1 would take 400 / 1.19526 = 334.65 -> 335; a token picks distinct experts,
  // so it keeps 200 and expert 2 takes the other 135 on top of its 42.
  const Counts c = route("zipf:3.0");
  CHECK(c == Counts{200, 177, 12, 5, 3, 1, 1, 1});
  CHECK(std::accumulate(c.begin(), c.end(), std::int64_t{0}) == 400);
}

TEST_CASE("a router's histogram from a file, with zero-token experts, and the busiest rank") {
  const auto path = test::write_temp("routing.json", "[0, 120, 0, 80, 50, 50, 0, 100]");
  const Counts c = route(path);
  CHECK(c == Counts{0, 120, 0, 80, 50, 50, 0, 100});
  // Rank 0 holds experts 1-4 (200 tokens), rank 1 experts 5-8 (200): equal, so the lower rank.
  const RankLoad load = busiest_rank(c, 2);
  CHECK(load.rank == 0);
  CHECK(load.counts == Counts{0, 120, 0, 80});
  CHECK(load.min == 0);
  CHECK(load.max == 120);
  CHECK(load.total == 200);
  CHECK(busiest_rank(route("zipf:1.0"), 2).total == 147 + 74 + 49 + 37);
}

TEST_CASE("bad routing is one bad_input line naming --routing") {
  CHECK_THROWS_WITH(parse_routing("zipf:-1"),
                    Catch::Contains("the zipf exponent must be a number above 0"));
  CHECK_THROWS_WITH(parse_routing("zipf:"), Catch::Contains("--routing zipf:"));
  CHECK_THROWS_WITH(route(test::write_temp("short.json", "[1, 2, 3]")),
                    Catch::Contains("3 counts, but the model has 8 routed experts"));
  CHECK_THROWS_WITH(route(test::write_temp("negative.json", "[1, 2, 3, -4, 5, 6, 7, 8]")),
                    Catch::Contains("entry 3 (expert 4): -4 tokens is negative"));
  CHECK_THROWS_WITH(route(test::write_temp("fraction.json", "[1, 2.5, 3, 4, 5, 6, 7, 8]")),
                    Catch::Contains("entry 1 (expert 2): expected a whole number of tokens"));
  CHECK_THROWS_WITH(route(test::write_temp("zero.json", "[0, 0, 0, 0, 0, 0, 0, 0]")),
                    Catch::Contains("every count is zero"));
  CHECK_THROWS_AS(route("/nonexistent/routing.json"), Error);
}
