#pragma once
// The capture's process-wide state: whether it is on, where its files go, the table, the periodic
// writer, and finding the real functions behind the hooks. Everything here is reached from hooks
// that may run on any thread, before main and during exit, so the state is made on first use and
// never destroyed.
#include <atomic>
#include <cstdint>
#include <string>

#include "capture/table.hpp"

namespace opbench::capture {

// Nesting depth of intercepted calls on this thread: a hook only records at depth 0, so a call
// made inside another intercepted call (a CBLAS routine calling sgemm_, cuBLAS calling cuBLASLt,
// MPI's collectives calling MPI_Send) counts once. initial-exec: the library is preloaded, and
// the general TLS model may allocate on first access.
extern thread_local int t_depth __attribute__((tls_model("initial-exec")));

struct CallScope {
  CallScope() { ++t_depth; }
  ~CallScope() { --t_depth; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};

// True when the capture initialised (output folder usable, settings valid); false after any
// failure, and then every hook only passes its call through.
bool enabled();
// Whether a hook on this thread should time and record its call.
inline bool should_record() {
  return t_depth == 0 && enabled();
}

void record(const CaptureKey& key, double ns);
void record_untimed(const CaptureKey& key, Untimed why);
std::uint64_t now_ns();

// One `opbench-capture: <message>` line on stderr, for the first failure of the process only.
void say_once(const std::string& message);
// Any failure that makes the capture's figures wrong: say so and stop recording.
void fail(const std::string& message);

// The real definition of `name`: the next one after this library in the global lookup order
// (RTLD_NEXT), else one in any object loaded since, including those dlopen'ed with RTLD_LOCAL
// (Python extension modules load libblas.so.3 that way); nullptr when none defines it.
void* resolve_symbol(const char* name);
// The program called `name` and nothing but this library defines it: what the dynamic linker
// would have done without the capture (a lookup error, exit 127).
[[noreturn]] void symbol_missing(const char* name);

template <class Fn>
Fn real_function(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = resolve_symbol(name);
    if (p == nullptr) symbol_missing(name);
    slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

// A function the exit path calls before the final write (the GPU timer's drain of timings still
// in flight); at most a few are registered.
void at_exit_before_write(void (*fn)());

// Writes the tables now (the tests and the exit path); false when writing failed.
bool write_tables(bool final_write);

// Runs `body` on a detached thread that takes no signals (they stay with the program's own
// threads); 0, or pthread_create's error.
int start_quiet_thread(void (*body)());

}  // namespace opbench::capture

// Exported hooks need default visibility; everything else in the library is hidden.
#define OPBENCH_CAPTURE_EXPORT extern "C" __attribute__((visibility("default")))

// In a hook of `name`: real_<name>, the function it stands in front of, of type `...`, looked up
// on the first call (real_function).
#define OPBENCH_REAL_FN(name, ...)                \
  static std::atomic<void*> slot_##name{nullptr}; \
  auto real_##name = real_function<__VA_ARGS__>(slot_##name, #name)
