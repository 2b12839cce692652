#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "common/stats.hpp"

using opbench::compute_stats;
using opbench::percentile_sorted;

TEST_CASE("percentiles of 1..10 interpolate between ranks like numpy") {
  std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(percentile_sorted(v, 0) == 1.0);
  CHECK(percentile_sorted(v, 50) == Approx(5.5));
  CHECK(percentile_sorted(v, 90) == Approx(9.1));
  CHECK(percentile_sorted(v, 99) == Approx(9.91));
  CHECK(percentile_sorted(v, 100) == 10.0);
}

TEST_CASE("stats of a known sample") {
  // mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; sample variance 32/7
  std::vector<double> v{9, 2, 4, 4, 5, 4, 7, 5};
  auto s = compute_stats(v);
  CHECK(s.count == 8);
  CHECK(s.mean == Approx(5.0));
  CHECK(s.median == Approx(4.5));
  CHECK(s.min == 2.0);
  CHECK(s.max == 9.0);
  CHECK(s.stddev == Approx(std::sqrt(32.0 / 7.0)));
  CHECK(s.cv == Approx(std::sqrt(32.0 / 7.0) / 5.0));
  CHECK(s.rse == Approx(std::sqrt(32.0 / 7.0) / 5.0 / std::sqrt(8.0)));
}

TEST_CASE("stats of one sample have no spread") {
  auto s = compute_stats(std::vector<double>{42});
  CHECK(s.mean == 42);
  CHECK(s.p99 == 42);
  CHECK(s.stddev == 0);
}
