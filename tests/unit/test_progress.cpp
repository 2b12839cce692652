#include <catch2/catch.hpp>

#include "common/progress.hpp"

using opbench::CaseTime;
using opbench::eta_seconds;

TEST_CASE("eta: one case done, the rest estimated by count") {
  // 2 s for the first case, 3 cases left: 6 s, whatever work they hold
  CHECK(eta_seconds({{1e9, 2.0}}, 3, 1e13) == Approx(6.0));
  CHECK(eta_seconds({}, 3, 1e13) < 0);  // nothing known yet
}

TEST_CASE("eta: a fixed part and a part per unit of work, fitted") {
  // (1, 1 s) and (3, 2 s): seconds = 0.5 + 0.5 * work; 2 cases of 10 work in all: 0.5*2 + 0.5*10
  // = 6 s, under the cap of 2 cases x the slowest 2 s = 4 s: 4 s.
  CHECK(eta_seconds({{1, 1}, {3, 2}}, 2, 10) == Approx(4.0));
  // the same fit with little work left stays under the cap: 0.5*4 + 0.5*2 = 3 s (cap 8 s)
  CHECK(eta_seconds({{1, 1}, {3, 2}}, 4, 2) == Approx(3.0));
}

TEST_CASE("eta: the fit is kept to a >= 0 and b >= 0") {
  // bigger case faster (2 s then 1 s): by count, mean 1.5 s x 2 cases
  CHECK(eta_seconds({{1, 2}, {3, 1}}, 2, 100) == Approx(3.0));
  // (1, 1 s), (3, 5 s): the line 2w - 1 has a < 0: by work alone, 6 s / 4 work = 1.5 s per
  // unit; 1 unit left in 1 case: 1.5 s (under the cap 5 s)
  CHECK(eta_seconds({{1, 1}, {3, 5}}, 1, 1) == Approx(1.5));
}

TEST_CASE("eta: a sweep that starts small is not taken for hours (issue 30 item 1)") {
  // The main job's shape: first case 1 GFLOP in 1 s, 63 cases and 1e13 FLOPs left. By work it
  // said 1e4 s (2h46m); by count it is 63 s.
  CHECK(eta_seconds({{1e9, 1.0}}, 63, 1e13) == Approx(63.0));
}
