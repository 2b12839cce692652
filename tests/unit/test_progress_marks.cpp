// The bookkeeping of a device's progress marks (collectives/progress_marks.hpp), with a stand-in
// for the stream: a marker has passed when the "device" has completed the calls before it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "collectives/progress_marks.hpp"
#include "collectives/stall_detector.hpp"

using opbench::ProgressMarks;
using opbench::StallDetector;

namespace {

// A stream that has completed `device_done` calls; each slot's marker remembers the calls
// issued when it was recorded, as a CUDA event remembers its place on the stream.
struct FakeStream {
  std::int64_t issued = 0, device_done = 0;
  std::vector<std::int64_t> marker;
  int records = 0;
  explicit FakeStream(std::size_t slots) : marker(slots, -1) {}
  void issue(ProgressMarks& m, std::int64_t calls) {
    issued += calls;
    m.issued(calls, [&](std::size_t slot) {
      marker[slot] = issued;
      ++records;
      return true;
    });
  }
  std::int64_t look(ProgressMarks& m) {
    return m.completed([&](std::size_t slot) { return marker[slot] <= device_done; });
  }
};

}  // namespace

TEST_CASE("progress marks: a marker every 8 calls, the newest passed one is the progress") {
  ProgressMarks m(4, 8);
  FakeStream s(4);
  for (int i = 0; i < 20; ++i)
    s.issue(m, 1);
  CHECK(s.records == 2);  // after calls 8 and 16
  CHECK(s.look(m) == 0);
  s.device_done = 15;  // past the first marker only
  CHECK(s.look(m) == 8);
  s.device_done = 20;
  CHECK(s.look(m) == 16);  // calls 17..20 have no marker yet
  m.all_done();            // the stream is idle: everything issued is done
  CHECK(s.look(m) == 20);
}

TEST_CASE("progress marks: a device far behind skips marks rather than reuse a pending one") {
  ProgressMarks m(2, 1);
  FakeStream s(2);
  for (int i = 0; i < 5; ++i)
    s.issue(m, 1);
  CHECK(s.records == 2);  // calls 1 and 2; the ring was full for 3, 4 and 5
  s.device_done = 5;
  CHECK(s.look(m) == 2);  // the markers say no more than they saw
  s.issue(m, 1);          // a free slot again: call 6 is marked
  CHECK(s.records == 3);
  s.device_done = 6;
  CHECK(s.look(m) == 6);
}

TEST_CASE("progress marks: a replay of many calls is one mark of all of them") {
  // -G: the 20 captured calls are marked once per replay.
  ProgressMarks m(8, 8);
  FakeStream s(8);
  s.issue(m, 20);
  s.issue(m, 20);
  CHECK(s.records == 2);
  s.device_done = 20;
  CHECK(s.look(m) == 20);
}

TEST_CASE("progress marks: -G with -n 3 is marked every third replay, 9 calls apart") {
  CHECK(ProgressMarks::calls_between_marks(8, 1) == 8);    // launches: every 8th call
  CHECK(ProgressMarks::calls_between_marks(8, 3) == 9);    // replays of 3: every third
  CHECK(ProgressMarks::calls_between_marks(8, 8) == 8);    // replays of 8: every one
  CHECK(ProgressMarks::calls_between_marks(8, 20) == 20);  // replays of 20: every one
  ProgressMarks m(8, 8);
  FakeStream s(8);
  for (int replay = 0; replay < 12; ++replay)
    s.issue(m, 3);
  REQUIRE(s.records == 4);  // after replays 3, 6, 9 and 12
  for (int i = 0; i < 4; ++i)
    CHECK(s.marker[i] == 9 * (i + 1));
}

TEST_CASE("progress marks: the guard's allowance for -G -n 3 covers the 9 calls between marks") {
  // 12 replays of 3 calls, each call 1 s on the device, --timeout 5 s, the guard looking every
  // 0.1 s: the progress it sees moves at t = 9, 18, 27, 36 s. Allowing for the 9 calls between
  // marks (5 + 9 s) it never fires; allowing for one replay's 3 calls (5 + 3 s, the figure the
  // runner used) it fired at t = 8.1 s on a healthy device.
  ProgressMarks m(8, 8);
  FakeStream s(8);
  for (int replay = 0; replay < 12; ++replay)
    s.issue(m, 3);
  const double per_call_s = 1;
  StallDetector guard(5, static_cast<double>(ProgressMarks::calls_between_marks(8, 3)) * per_call_s,
                      0, 0);
  StallDetector one_replay(5, 3 * per_call_s, 0, 0);
  double first_fired_s = -1;
  for (int tenths = 1; tenths <= 360; ++tenths) {
    const double t = tenths / 10.0;
    s.device_done = tenths / 10;
    const std::int64_t seen = s.look(m);
    CHECK_FALSE(guard.stalled(seen, t));
    if (one_replay.stalled(seen, t) && first_fired_s < 0) first_fired_s = t;
  }
  CHECK(guard.done() == 36);
  CHECK(first_fired_s == Approx(8.1));
}

TEST_CASE("progress marks: a marker that could not be recorded is not waited for") {
  ProgressMarks m(4, 1);
  std::int64_t issued = 0;
  m.issued(1, [&](std::size_t) { return false; });  // cudaEventRecord failed
  ++issued;
  CHECK(m.completed([](std::size_t) { return false; }) == 0);
  m.issued(1, [&](std::size_t) { return true; });
  ++issued;
  CHECK(m.completed([](std::size_t) { return true; }) == issued);
}
