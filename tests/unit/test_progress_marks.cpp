// The bookkeeping of a device's progress marks (collectives/progress_marks.hpp), with a stand-in
// for the stream: a marker has passed when the "device" has completed the calls before it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "collectives/progress_marks.hpp"

using opbench::ProgressMarks;

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
