#include "capture/gpu_timer.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "capture/runtime.hpp"

namespace opbench::capture {
namespace {

// The driver's types, as cuda.h declares them: results are ints (CUDA_SUCCESS = 0,
// CUDA_ERROR_NOT_READY = 600), handles are pointers.
using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;
constexpr unsigned kEventDefault = 0;  // CU_EVENT_DEFAULT: timing enabled

struct Driver {
  CUresult (*ctx_get_current)(void**) = nullptr;
  CUresult (*ctx_set_current)(void*) = nullptr;
  CUresult (*event_create)(void**, unsigned) = nullptr;
  CUresult (*event_record)(void*, void*) = nullptr;
  CUresult (*event_query)(void*) = nullptr;
  CUresult (*event_elapsed)(float*, void*, void*) = nullptr;
  // cuStreamIsCapturing(stream, &status): status 0 is CU_STREAM_CAPTURE_STATUS_NONE
  CUresult (*stream_is_capturing)(void*, int*) = nullptr;
  bool ok = false;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    r.ctx_get_current =
        reinterpret_cast<decltype(r.ctx_get_current)>(resolve_symbol("cuCtxGetCurrent"));
    r.ctx_set_current =
        reinterpret_cast<decltype(r.ctx_set_current)>(resolve_symbol("cuCtxSetCurrent"));
    r.event_create = reinterpret_cast<decltype(r.event_create)>(resolve_symbol("cuEventCreate"));
    r.event_record = reinterpret_cast<decltype(r.event_record)>(resolve_symbol("cuEventRecord"));
    r.event_query = reinterpret_cast<decltype(r.event_query)>(resolve_symbol("cuEventQuery"));
    // cuda.h maps cuEventElapsedTime to the _v2 entry point since CUDA 12.8
    r.event_elapsed =
        reinterpret_cast<decltype(r.event_elapsed)>(resolve_symbol("cuEventElapsedTime_v2"));
    if (r.event_elapsed == nullptr)
      r.event_elapsed =
          reinterpret_cast<decltype(r.event_elapsed)>(resolve_symbol("cuEventElapsedTime"));
    r.stream_is_capturing =
        reinterpret_cast<decltype(r.stream_is_capturing)>(resolve_symbol("cuStreamIsCapturing"));
    r.ok = r.ctx_get_current && r.ctx_set_current && r.event_create && r.event_record &&
           r.event_query && r.event_elapsed;
    return r;
  }();
  return d;
}

struct Pending {
  CaptureKey key;
  GpuTiming timing;
};

struct Timer {
  std::mutex mutex;
  std::unordered_map<void*, std::vector<void*>> free_events;  // per context
  std::deque<Pending> pending;
  std::condition_variable wake;
  bool poller_started = false;
};

Timer& timer() {
  static Timer* t = [] {
    auto* made = new Timer();
    pthread_atfork([] { timer().mutex.lock(); }, [] { timer().mutex.unlock(); },
                   [] {
                     // CUDA cannot be used in a forked child: drop the parent's timings
                     Timer& c = timer();
                     new (&c.mutex) std::mutex();
                     new (&c.wake) std::condition_variable();
                     c.pending.clear();
                     c.free_events.clear();
                     c.poller_started = false;
                   });
    return made;
  }();
  return *t;
}

void* take_event(Timer& t, void* context) {
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    auto& pool = t.free_events[context];
    if (!pool.empty()) {
      void* e = pool.back();
      pool.pop_back();
      return e;
    }
  }
  void* e = nullptr;
  if (driver().event_create(&e, kEventDefault) != kSuccess) return nullptr;
  return e;
}

// Records every pending timing whose end event has completed; the caller holds t.mutex.
void poll_locked(Timer& t) {
  const Driver& d = driver();
  for (auto it = t.pending.begin(); it != t.pending.end();) {
    d.ctx_set_current(it->timing.context);
    const CUresult q = d.event_query(it->timing.end);
    if (q == kNotReady) {
      ++it;
      continue;
    }
    float ms = 0;
    const bool timed =
        q == kSuccess && d.event_elapsed(&ms, it->timing.start, it->timing.end) == kSuccess;
    record(it->key, timed ? static_cast<double>(ms) * 1e6 : -1.0);
    auto& pool = t.free_events[it->timing.context];
    pool.push_back(it->timing.start);
    pool.push_back(it->timing.end);
    it = t.pending.erase(it);
  }
}

void poller_loop() {
  Timer& t = timer();
  t_depth = 1;  // the driver calls made here are the capture's own
  std::unique_lock<std::mutex> lock(t.mutex);
  for (;;) {
    // 200 µs between polls while work is in flight: the time of a GPU call does not depend on
    // when it is read, only the memory held by pending events does
    t.wake.wait_for(lock, std::chrono::microseconds(200), [&] { return !t.pending.empty(); });
    poll_locked(t);
  }
}

void start_poller(Timer& t) {
  if (t.poller_started) return;
  t.poller_started = true;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, nullptr,
      [](void*) -> void* {
        poller_loop();
        return nullptr;
      },
      nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) pthread_detach(thread);
}

}  // namespace

GpuTiming gpu_begin(void* stream) {
  GpuTiming g;
  const Driver& d = driver();
  if (!d.ok || d.ctx_get_current(&g.context) != kSuccess || g.context == nullptr) return g;
  // A call made while its stream is being captured into a CUDA graph does not run now (it runs
  // at each replay, which no hook sees), and events recorded into the capture would become
  // part of the graph: count it untimed. Seen on an H200: bench_gemm's graph capture of
  // cublasLtMatmul failed under the capture library until this check.
  int capturing = 0;
  if (d.stream_is_capturing && d.stream_is_capturing(stream, &capturing) == kSuccess &&
      capturing != 0)
    return g;
  Timer& t = timer();
  g.start = take_event(t, g.context);
  g.end = take_event(t, g.context);
  if (g.start == nullptr || g.end == nullptr || d.event_record(g.start, stream) != kSuccess) {
    std::lock_guard<std::mutex> lock(t.mutex);
    auto& pool = t.free_events[g.context];
    if (g.start) pool.push_back(g.start);
    if (g.end) pool.push_back(g.end);
    g.start = g.end = nullptr;
    return g;
  }
  g.ok = true;
  return g;
}

void gpu_end(GpuTiming& g, void* stream, const CaptureKey& key) {
  if (!g.ok || driver().event_record(g.end, stream) != kSuccess) {
    if (g.ok) {
      Timer& t = timer();
      std::lock_guard<std::mutex> lock(t.mutex);
      auto& pool = t.free_events[g.context];
      pool.push_back(g.start);
      pool.push_back(g.end);
    }
    record(key, -1.0);
    return;
  }
  Timer& t = timer();
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    t.pending.push_back(Pending{key, g});
    if (!t.poller_started) at_exit_before_write(gpu_drain);
    start_poller(t);
  }
  t.wake.notify_one();
}

void gpu_cancel(GpuTiming& g) {
  if (!g.ok) return;
  Timer& t = timer();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto& pool = t.free_events[g.context];
  pool.push_back(g.start);
  pool.push_back(g.end);
  g.ok = false;
}

void gpu_drain() {
  if (!driver().ok) return;
  // At exit the program has usually synchronized already; timings still in flight get up to a
  // second, polled like the background thread does (never a synchronizing call), then the
  // rest is dropped.
  Timer& t = timer();
  for (int i = 0; i < 1000; ++i) {
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      poll_locked(t);
      if (t.pending.empty()) return;
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
  }
}

}  // namespace opbench::capture
