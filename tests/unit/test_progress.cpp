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

TEST_CASE("eta by case: a case 16 times larger counts as up to the stop bound (issue 44 item 6)") {
  // 3 cases of 1 GFLOP done, 1 s each: 0.2 s set-up, 0.8 s warm-up and sampling. Left: one of 16
  // GFLOP. Set-up is fitted by count (one size seen): 0.2 s; sampling grows with the run's work,
  // 0.8 x 16 = 12.8 s, but the stop rule cuts it at 2.05 s (warm-up 0.05 + --max-time 2).
  const std::vector<opbench::CaseTime> done = {{1e9, 1.0, 0.8}, {1e9, 1.0, 0.8}, {1e9, 1.0, 0.8}};
  CHECK(eta_seconds(done, std::vector<double>{16e9}, {2.05, 6}) == Approx(0.2 + 2.05));
  // The old estimate by count said 1 s: the slowest case seen.
  CHECK(eta_seconds(done, 1, 16e9) == Approx(1.0));
  // Without a known bound, at most the longest sampling seen.
  CHECK(eta_seconds(done, std::vector<double>{16e9}, {}) == Approx(0.2 + 0.8));
  // A run of 0.1 s at 1 GFLOP: 1.6 s at 16 GFLOP, and the fewest 6 runs (1 warm-up, 5 samples)
  // take 9.6 s, past the bound: the case takes 9.6 s (its sampling fitted by work: 12.8 s).
  const std::vector<opbench::CaseTime> runs = {
      {1e9, 1.0, 0.8, 0.1}, {1e9, 1.0, 0.8, 0.1}, {1e9, 1.0, 0.8, 0.1}};
  CHECK(eta_seconds(runs, std::vector<double>{16e9}, {2.05, 6}) == Approx(0.2 + 9.6));
}

TEST_CASE("eta by case: a --check that grows with the case is fitted apart from the sampling") {
  // bench_memops --check: set-up and check 0.1 s per MB (1, 2 and 4 MB: 0.1, 0.2, 0.4 s), the
  // sampling 1 s each (the stop rule's min time). Left: 8 MB and 16 MB: set-up 0.8 + 1.6 s, and
  // sampling fitted flat at 1 s a case: 4.4 s in all.
  const std::vector<opbench::CaseTime> done = {{1e6, 1.1, 1.0}, {2e6, 1.2, 1.0}, {4e6, 1.4, 1.0}};
  CHECK(eta_seconds(done, std::vector<double>{8e6, 16e6}, {2.05, 6}) == Approx(0.8 + 1.6 + 2.0));
}
