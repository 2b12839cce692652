// The guard's decision (collectives/stall_detector.hpp) on a stand-in clock: seconds passed by
// hand, so each case reads as a timeline.
#include <catch2/catch.hpp>

#include <cstdint>

#include "collectives/stall_detector.hpp"

using opbench::StallDetector;

TEST_CASE("stall detector: no progress for --timeout plus one call's time fires, not before") {
  // --timeout 5 s, one call expected to take 0.0457 s (the 4 MiB all_reduce), phase
  // begun at t = 100 with 40 calls done before it.
  StallDetector d(5, 0.0457, 100, 40);
  CHECK(d.allowance_s() == Approx(5.0457));
  CHECK_FALSE(d.stalled(40, 103));
  CHECK_FALSE(d.stalled(40, 105.04));
  CHECK(d.stalled(40, 105.05));
  CHECK(d.quiet_s(105.05) == Approx(5.05));
  CHECK(d.done() == 0);
}

TEST_CASE("stall detector: a completed call restarts the wait") {
  StallDetector d(5, 0.05, 0, 0);
  CHECK_FALSE(d.stalled(3, 4));     // three calls by t = 4: the wait now counts from 4
  CHECK_FALSE(d.stalled(3, 9));     // 5 s after the last progress: within 5.05
  CHECK_FALSE(d.stalled(4, 9.04));  // one more call just in time
  CHECK_FALSE(d.stalled(4, 14.08));
  CHECK(d.stalled(4, 14.1));  // 5.06 s since t = 9.04
  CHECK(d.done() == 4);
}

TEST_CASE("stall detector: a long sample that keeps completing calls never fires") {
  // 3000 calls of 0.0457 s (137 s, 27 times --timeout) looked at every 0.1 s, with one call of
  // 4.9 s among them (a slow call, not a hang): never stalled, and every call counted.
  StallDetector d(5, 0.0457, 0, 0);
  double call_end = 0;
  std::int64_t completed = 0;
  for (double t = 0.1; completed < 3000; t += 0.1) {
    while (completed < 3000 && call_end + (completed == 1500 ? 4.9 : 0.0457) <= t) {
      call_end += completed == 1500 ? 4.9 : 0.0457;
      ++completed;
    }
    REQUIRE_FALSE(d.stalled(completed, t));
  }
  CHECK(d.done() == 3000);
}

TEST_CASE("stall detector: before any call is timed, --timeout alone") {
  // The first call of a case has no expected time yet (gap 0).
  StallDetector d(2, 0, 10, 0);
  CHECK_FALSE(d.stalled(0, 12));
  CHECK(d.stalled(0, 12.001));
}
