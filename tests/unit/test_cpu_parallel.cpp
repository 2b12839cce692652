#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/cpu_parallel.hpp"

using namespace opbench;

TEST_CASE("parallel_for runs every item once, on threads kept from call to call",
          "[cpu_parallel]") {
  limit_cpu_threads(0, 0);
  const unsigned threads = parallel_threads(1000);
  // A thread's first item counts it (a new thread starts with its thread_local unset; an id
  // could be reused by the next new thread, a thread_local cannot).
  static std::atomic<int> threads_seen{0};
  for (int call = 0; call < 200; ++call) {
    std::vector<std::atomic<int>> runs(1000);
    parallel_for(1000, [&](std::int64_t i) {
      runs[static_cast<std::size_t>(i)]++;
      thread_local bool counted = false;
      if (!counted) {
        counted = true;
        threads_seen++;
      }
    });
    for (auto& r : runs)
      REQUIRE(r.load() == 1);
  }
  // 200 calls ran on the caller and at most threads - 1 helpers, not on new threads each call
  CHECK(threads_seen.load() <= static_cast<int>(threads));
}

TEST_CASE("parallel_for inside an item, with one thread, and when an item throws",
          "[cpu_parallel]") {
  limit_cpu_threads(0, 0);
  std::atomic<int> inner{0};
  parallel_for(8, [&](std::int64_t) { parallel_for(5, [&](std::int64_t) { inner++; }); });
  CHECK(inner.load() == 40);

  limit_cpu_threads(1, 0);  // --threads 1: everything on the caller
  std::set<std::thread::id> ran_on;
  parallel_for(50, [&](std::int64_t) { ran_on.insert(std::this_thread::get_id()); });
  CHECK(ran_on == std::set<std::thread::id>{std::this_thread::get_id()});
  limit_cpu_threads(0, 0);

  CHECK_THROWS_WITH(parallel_for(100,
                                 [](std::int64_t i) {
                                   if (i == 37) throw std::runtime_error("item 37");
                                 }),
                    "item 37");
  std::atomic<int> after{0};  // the pool still works after a throw
  parallel_for(64, [&](std::int64_t) { after++; });
  CHECK(after.load() == 64);
}

TEST_CASE("parallel_for from two threads at once: each call's items run once", "[cpu_parallel]") {
  limit_cpu_threads(0, 0);
  std::atomic<int> a{0}, b{0};
  std::thread other([&] {
    for (int i = 0; i < 100; ++i)
      parallel_for(100, [&](std::int64_t) { a++; });
  });
  for (int i = 0; i < 100; ++i)
    parallel_for(100, [&](std::int64_t) { b++; });
  other.join();
  CHECK(a.load() == 10000);
  CHECK(b.load() == 10000);
}

TEST_CASE("parallel_for's first call in a fresh process finishes however late its threads start",
          "[cpu_parallel]") {
  // A forked child starts a pool of its own; a thread that starts after the call has published
  // its work must still take part (it once waited for the next call instead: a hang in 1 of 4
  // runs of bench_memops). alarm() turns a hang into a failed child.
  limit_cpu_threads(0, 0);
  int hung_or_wrong = 0;
  for (int child = 0; child < 40 && hung_or_wrong == 0; ++child) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(5);
      std::atomic<int> n{0};
      parallel_for(parallel_threads(1000) * 4, [&](std::int64_t) { n++; });
      _exit(n.load() == static_cast<int>(parallel_threads(1000)) * 4 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++hung_or_wrong;
  }
  CHECK(hung_or_wrong == 0);
}

TEST_CASE("parallel_for where the system refuses threads runs its items on the caller, every call",
          "[cpu_parallel]") {
  // A forked child under a process limit of 1 (RLIMIT_NPROC, as a container's pids limit: the
  // kernel refuses the pool's threads with EAGAIN; root, which the limit spares, becomes nobody
  // first) asks for 4 threads (3 helpers) four times. The pool once counted a worker before its
  // thread started: each of the first three calls threw, counting one more worker, and the
  // fourth waited for the three that never ran: alarm() turns that hang into a failed child.
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(5);
    limit_cpu_threads(4, 1);
    const rlimit one{1, 1};
    if (setrlimit(RLIMIT_NPROC, &one) != 0) _exit(10);
    if (geteuid() == 0 && setuid(65534) != 0) _exit(11);
    try {
      std::thread([] {}).join();
      _exit(12);  // the limit did not hold: the test proves nothing here
    } catch (const std::system_error&) {
    }
    int result = 0;
    for (int call = 0; call < 4; ++call) {
      std::atomic<int> n{0};
      try {
        parallel_for(8, [&](std::int64_t) { n++; });
      } catch (const std::system_error&) {
        result = 2;  // the refused thread came out of parallel_for
      }
      if (n.load() != 8 && result == 0) result = 1;
    }
    _exit(result);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  INFO("child: " << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                       : "signal " + std::to_string(WTERMSIG(status)))
                 << " (1: items lost, 2: threw, 10-12: the limit could not be set; SIGALRM: hung)");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
