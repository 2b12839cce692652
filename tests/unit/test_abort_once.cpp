// The once-only hand-over of a case's abort hook (collectives/abort_once.hpp) between the main
// thread, which opens and closes it around a case, and a thread ending the job, which fires it.
// Each order is forced by joining or by promises, so every run checks the same interleaving.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "collectives/abort_once.hpp"

using opbench::AbortOnce;

namespace {

// A hook that counts its calls and keeps the last reason, as rank 0's row writer would.
struct Counted {
  int calls = 0;
  std::string reason;
  AbortOnce::Hook hook() {
    return [this](const std::string& r) {
      ++calls;
      reason = r;
    };
  }
};

}  // namespace

TEST_CASE("abort once: fired before the case closes, the hook runs once and close says so") {
  AbortOnce abort;
  Counted row;
  abort.open(row.hook());
  bool took = false;
  std::thread watchdog([&] { took = abort.fire("timeout: the case hung"); });
  watchdog.join();  // fire first
  CHECK(took);
  CHECK(row.calls == 1);
  CHECK(row.reason == "timeout: the case hung");
  CHECK(abort.close());  // the main thread must not write its own row
  // A second thread ending the job (a rank lost meanwhile) adds no second row.
  std::thread liveness([&] { took = abort.fire("rank 1 ended without finishing"); });
  liveness.join();
  CHECK_FALSE(took);
  CHECK(row.calls == 1);
}

TEST_CASE("abort once: closed before it fires, the hook does not run") {
  AbortOnce abort;
  Counted row;
  abort.open(row.hook());
  CHECK_FALSE(abort.close());  // close first: the case's own row stands
  bool took = true;
  std::thread watchdog([&] { took = abort.fire("timeout: too late"); });
  watchdog.join();
  CHECK_FALSE(took);
  CHECK(row.calls == 0);
  // Firing is final: the next case's hook never runs, and its close says the process is ending.
  Counted next;
  abort.open(next.hook());
  CHECK(abort.close());
  CHECK(next.calls == 0);
}

TEST_CASE("abort once: close waits for a hook that is running, then says it fired") {
  AbortOnce abort;
  std::promise<void> entered, release;
  auto released = release.get_future().share();
  int calls = 0;
  abort.open([&](const std::string&) {
    ++calls;
    entered.set_value();
    released.wait();  // a row being written
  });
  std::thread watchdog([&] { abort.fire("interrupted: SIGTERM"); });
  entered.get_future().wait();
  auto closed = std::async(std::launch::async, [&] { return abort.close(); });
  // While the hook runs, close() cannot return: the row would be half written.
  CHECK(closed.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  release.set_value();
  CHECK(closed.get());
  watchdog.join();
  CHECK(calls == 1);
}

TEST_CASE("abort once: another rank takes the hook without calling it, and still stops the case") {
  AbortOnce abort;
  Counted row;
  abort.open(row.hook());
  bool took = false;
  std::thread watchdog([&] { took = abort.fire("timeout", /*call=*/false); });
  watchdog.join();
  CHECK(took);
  CHECK(row.calls == 0);
  CHECK(abort.close());
}
