#include "capture/gpu_timer.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/gpu_sampling.hpp"
#include "capture/runtime.hpp"

namespace opbench::capture {
namespace {

// The driver's types, as cuda.h declares them: results are ints (CUDA_SUCCESS = 0,
// CUDA_ERROR_NOT_READY = 600), handles are pointers, enums are ints.
using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;
constexpr unsigned kEventDefault = 0;   // CU_EVENT_DEFAULT: timing enabled
constexpr int kCaptureModeRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

struct Driver {
  CUresult (*ctx_get_current)(void**) = nullptr;
  CUresult (*ctx_set_current)(void*) = nullptr;
  // cuCtxGetId (CUDA 12.0): an id unique over the process's lifetime; absent before
  CUresult (*ctx_get_id)(void*, unsigned long long*) = nullptr;
  CUresult (*event_create)(void**, unsigned) = nullptr;
  CUresult (*event_destroy)(void*) = nullptr;
  CUresult (*event_record)(void*, void*) = nullptr;
  CUresult (*event_query)(void*) = nullptr;
  CUresult (*event_elapsed)(float*, void*, void*) = nullptr;
  // cuStreamIsCapturing(stream, &status): status 0 is CU_STREAM_CAPTURE_STATUS_NONE
  CUresult (*stream_is_capturing)(void*, int*) = nullptr;
  // cuThreadExchangeStreamCaptureMode(&mode): sets this thread's mode, returns the old one
  CUresult (*exchange_capture_mode)(int*) = nullptr;
  bool ok = false;
};

template <class Fn>
void find(Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(resolve_symbol(name));
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    find(r.ctx_get_current, "cuCtxGetCurrent");
    find(r.ctx_set_current, "cuCtxSetCurrent");
    find(r.ctx_get_id, "cuCtxGetId");
    find(r.event_create, "cuEventCreate");
    // cuda.h maps cuEventDestroy to the _v2 entry point since CUDA 4.0
    find(r.event_destroy, "cuEventDestroy_v2");
    if (r.event_destroy == nullptr) find(r.event_destroy, "cuEventDestroy");
    find(r.event_record, "cuEventRecord");
    find(r.event_query, "cuEventQuery");
    // cuda.h maps cuEventElapsedTime to the _v2 entry point since CUDA 12.8
    find(r.event_elapsed, "cuEventElapsedTime_v2");
    if (r.event_elapsed == nullptr) find(r.event_elapsed, "cuEventElapsedTime");
    find(r.stream_is_capturing, "cuStreamIsCapturing");
    find(r.exchange_capture_mode, "cuThreadExchangeStreamCaptureMode");
    r.ok = r.ctx_get_current && r.ctx_set_current && r.event_create && r.event_destroy &&
           r.event_record && r.event_query && r.event_elapsed;
    return r;
  }();
  return d;
}

// This thread's stream-capture mode set to relaxed for the scope, then restored (the push-pop
// use the driver's documentation recommends), so that its queries never invalidate the job's
// own graph capture.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() {
    if (!driver().exchange_capture_mode) return;  // a driver before CUDA 10.1: no graphs either
    const CUresult r = driver().exchange_capture_mode(&mode_);
    changed_ = r == kSuccess;
    if (!changed_)
      say_once("cuThreadExchangeStreamCaptureMode failed (CUresult " + std::to_string(r) +
               "): the capture's event queries could invalidate a CUDA graph the job captures "
               "in global mode");
  }
  ~RelaxedCaptureMode() {
    if (changed_) driver().exchange_capture_mode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  int mode_ = kCaptureModeRelaxed;
  bool changed_ = false;
};

struct Pending {
  CaptureKey key;
  GpuTiming timing;
};

// No driver call is made while `mutex` is held: a hooked call takes it only to take events from
// a pool or hand a timing over, and never waits for the GPU behind it.
struct Timer {
  std::mutex mutex;
  std::unordered_map<unsigned long long, std::vector<void*>> free_events;  // per context id
  std::vector<Pending> pending;  // handed over, not yet taken by a poll; oldest first
  std::size_t in_hand = 0;       // taken by a poll that has not handed back what is still running
  std::condition_variable wake;  // the parked poller: something is pending
  bool poller_started = false;
  bool drain_registered = false;  // gpu_drain is on the exit path
  bool parked = false;   // the poller waits on `wake`: only then does a hand-over signal it
  bool closing = false;  // the exit drain polls alone
};

// The poller's pause between polls. The time of a GPU call does not depend on when it is read,
// only the events held meanwhile do; the poller's driver calls (a context made current and a
// query per busy stream) run beside the job's own launches, so it polls once a millisecond
// rather than every 200 µs as it did until the H200 runs of issue 41.
inline constexpr long kPollPauseNs = 1000000;
// Polls with nothing in flight before the poller parks (about 100 ms). While a job keeps the
// GPU busy the poller never parks, so a hooked call hands its timing over without signalling a
// thread: on the first H200 runs (gVisor, where a futex wake is a system call into the sandbox)
// the capture cost a 93 ms PyTorch step 2.1% with a wake-up a call.
inline constexpr int kIdlePollsBeforePark = 100;

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
                     c.in_hand = 0;
                     c.closing = false;
                     c.parked = false;
                     c.free_events.clear();
                     c.poller_started = false;
                   });
    return made;
  }();
  return *t;
}

// Which pool a context's events live in (GpuTiming::context_id): its id where the driver has
// cuCtxGetId, else its handle. nullopt where the driver has ids but refuses this context's (one
// destroyed, or a primary context not made again since a reset): a call there goes untimed
// rather than mixing handles with ids.
std::optional<unsigned long long> context_id(void* context) {
  if (driver().ctx_get_id == nullptr)
    return static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(context));
  unsigned long long id = 0;
  if (driver().ctx_get_id(context, &id) != kSuccess) return std::nullopt;
  return id;
}

void give_back(Timer& t, unsigned long long context, void* a, void* b) {
  std::lock_guard<std::mutex> lock(t.mutex);
  auto& pool = t.free_events[context];
  if (a) pool.push_back(a);
  if (b) pool.push_back(b);
}

// Events the driver refused where they may be dead (a query's error; without context ids, a
// record's): destroyed, never back into the pool, where every later call would take them and fail
// the same way. After cudaDeviceReset a primary context made again keeps its handle, and its
// pool held the old context's dead events: the calls after a reset went untimed for good. The
// destroy's own error (a dead handle) changes nothing.
void discard(void* a, void* b) {
  for (void* e : {a, b})
    if (e != nullptr) driver().event_destroy(e);
}

// A context's pooled events, all of them: once one is refused, the others (made in the same
// context) may be dead too.
void discard_pool(Timer& t, unsigned long long context) {
  std::vector<void*> pool;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    pool.swap(t.free_events[context]);
  }
  for (void* e : pool)
    discard(e, nullptr);
}

// Events a record refused. With context ids they are the live context's own (a stream of another
// context is refused too, a kernel fault refuses every record): back to the pool. Without, the
// device may have been reset under the same handle and they may be dead: destroyed.
void refused(Timer& t, const GpuTiming& g) {
  if (driver().ctx_get_id != nullptr)
    give_back(t, g.context_id, g.start, g.end);
  else
    discard(g.start, g.end);
}

void* new_event() {
  RelaxedCaptureMode relaxed;  // another thread may be capturing a graph in global mode
  void* e = nullptr;
  if (driver().event_create(&e, kEventDefault) != kSuccess) return nullptr;
  return e;
}

void* take_event(Timer& t, unsigned long long context) {
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    auto& pool = t.free_events[context];
    if (!pool.empty()) {
      void* e = pool.back();
      pool.pop_back();
      return e;
    }
  }
  return new_event();
}

// One pass over the timings in flight: takes them from the list, queries them outside the lock,
// records those whose end event has completed and hands the rest back, ahead of any handed over
// meanwhile. A stream completes its work in order, so once an end event on a stream is not
// ready, the later ones on it are not queried: a poll costs a query per busy stream, not per
// call in flight. `give_up` (the end of the exit drain): what is still running is counted so.
// Returns how many timings are still in flight.
std::size_t poll_once(Timer& t, bool give_up) {
  std::vector<Pending> batch;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    batch.swap(t.pending);
    t.in_hand += batch.size();
  }
  const Driver& d = driver();
  std::vector<Pending> running, done;
  std::vector<std::pair<void*, void*>> busy;   // (context, stream) with work still running
  std::vector<unsigned long long> gone_pools;  // of contexts that are no more
  for (Pending& p : batch) {
    const std::pair<void*, void*> where{p.timing.context, p.timing.stream};
    bool ready = false;
    float ms = 0;
    bool timed = false;
    bool gone = false;  // the context the events were made in is no more (cudaDeviceReset)
    if (std::find(busy.begin(), busy.end(), where) == busy.end()) {
      const auto now = context_id(p.timing.context);  // asked before it is made current
      gone = !now || *now != p.timing.context_id;
      if (gone) {
        gone_pools.push_back(p.timing.context_id);
        ready = true;
      } else {
        d.ctx_set_current(p.timing.context);
        const CUresult q = d.event_query(p.timing.end);
        ready = q != kNotReady;
        timed = q == kSuccess && d.event_elapsed(&ms, p.timing.start, p.timing.end) == kSuccess;
      }
    }
    if (ready) {
      if (timed) {
        record(p.key, static_cast<double>(ms) * 1e6);
        done.push_back(p);
      } else {
        record_untimed(p.key, Untimed::gpu_error);
        if (!gone) discard(p.timing.start, p.timing.end);  // a dead context's are not touched
      }
      continue;
    }
    busy.push_back(where);
    if (give_up)  // its events stay out of the pool: the stream may never reach them
      record_untimed(p.key, Untimed::in_flight_at_exit);
    else
      running.push_back(p);
  }
  std::lock_guard<std::mutex> lock(t.mutex);
  for (unsigned long long pool : gone_pools)  // its events dead: dropped, never handed over
    t.free_events.erase(pool);
  for (const Pending& p : done) {
    auto& pool = t.free_events[p.timing.context_id];
    pool.push_back(p.timing.start);
    pool.push_back(p.timing.end);
  }
  t.pending.insert(t.pending.begin(), running.begin(), running.end());
  t.in_hand -= batch.size();
  return t.pending.size() + t.in_hand;
}

void poller_loop() {
  Timer& t = timer();
  t_depth = 1;  // the driver calls made here are the capture's own
  RelaxedCaptureMode relaxed;
  int idle_polls = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(t.mutex);
      if (t.closing ||
          (t.pending.empty() && t.in_hand == 0 && idle_polls >= kIdlePollsBeforePark)) {
        t.parked = true;
        t.wake.wait(lock, [&] { return !t.pending.empty() && !t.closing; });
        t.parked = false;
        idle_polls = 0;
      }
    }
    idle_polls = poll_once(t, false) == 0 ? idle_polls + 1 : 0;
    struct timespec pause = {0, kPollPauseNs};  // with the lock free
    nanosleep(&pause, nullptr);
  }
}

// Starts the poller (t.mutex held); false when no thread could be made (pthread_create's EAGAIN
// in a container at its pids limit): the hooked calls then poll themselves (gpu_end), without
// waiting, so that the timings are still read while the job runs and their events reused, and
// the next hand-over tries again.
bool start_poller(Timer& t) {
  if (t.poller_started) return true;
  const int rc = start_quiet_thread(poller_loop);
  if (rc != 0) {
    say_once("could not start the thread that reads GPU timings (pthread_create: " +
             std::string(std::strerror(rc)) + "): the hooked calls read them, never waiting");
    return false;
  }
  t.poller_started = true;
  return true;
}

}  // namespace

GpuTiming gpu_begin(void* stream, const CaptureKey& key) {
  GpuTiming g;
  g.stream = stream;
  const Driver& d = driver();
  if (!d.ok || d.ctx_get_current(&g.context) != kSuccess || g.context == nullptr) return g;
  // A call made while its stream is being captured into a CUDA graph does not run now (it runs
  // at each replay, which no hook sees), and events recorded into the capture would become
  // part of the graph: count it untimed. Seen on an H200: bench_gemm's graph capture of
  // cublasLtMatmul failed under the capture library until this check. When the driver cannot
  // say (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: the legacy stream while another is captured), the
  // call is not timed either: an event recorded there could join or break a capture.
  if (d.stream_is_capturing) {
    int capturing = 0;
    if (d.stream_is_capturing(stream, &capturing) != kSuccess) {
      g.why = Untimed::capture_unknown;
      return g;
    }
    if (capturing != 0) {
      g.why = Untimed::graph_capture;
      return g;
    }
  }
  if (!sample_gpu_call(key)) {
    g.why = Untimed::not_sampled;
    return g;
  }
  const auto id = context_id(g.context);  // (after the sampling: a call sampled out pays nothing)
  if (!id) return g;
  g.context_id = *id;
  Timer& t = timer();
  g.start = take_event(t, g.context_id);
  g.end = take_event(t, g.context_id);
  if (g.start == nullptr || g.end == nullptr) {
    give_back(t, g.context_id, g.start, g.end);
    g.start = g.end = nullptr;
    return g;
  }
  bool recorded = d.event_record(g.start, stream) == kSuccess;
  if (!recorded && d.ctx_get_id == nullptr) {
    // Without context ids the pool's events may be dead (the device reset since they were made,
    // under the same handle): once more with new ones, the pool dropped
    discard(g.start, g.end);
    discard_pool(t, g.context_id);
    g.start = new_event();
    g.end = new_event();
    recorded =
        g.start != nullptr && g.end != nullptr && d.event_record(g.start, stream) == kSuccess;
  }
  if (!recorded) {
    refused(t, g);
    g.start = g.end = nullptr;
    g.why = Untimed::gpu_error;
    return g;
  }
  g.ok = true;
  return g;
}

void gpu_end(GpuTiming& g, void* stream, const CaptureKey& key) {
  if (!g.ok) {
    record_untimed(key, g.why);
    return;
  }
  Timer& t = timer();
  if (driver().event_record(g.end, stream) != kSuccess) {
    refused(t, g);
    record_untimed(key, Untimed::gpu_error);
    return;
  }
  bool wake = false, closing = false, polled = true;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    closing = t.closing;
    if (!closing) {
      t.pending.push_back(Pending{key, g});
      if (!t.drain_registered) {
        at_exit_before_write(gpu_drain);
        // and as an exit handler of its own, registered now, after the CUDA runtime's (a GPU
        // call has been made), so that it runs before the runtime shuts the driver down at exit
        // (cudaErrorCudartUnloading: a call "after CUDA driver has been unloaded"); the
        // capture's own exit write, registered when the library was loaded, runs after it
        std::atexit(gpu_drain);
        t.drain_registered = true;
      }
      polled = start_poller(t);
      wake = t.parked;
    }
  }
  // A call handed over once the exit drain has begun may come after its last poll: it would be
  // in no table. It is counted as still running at exit, its events kept out of the pool.
  if (closing) record_untimed(key, Untimed::in_flight_at_exit);
  if (wake) t.wake.notify_one();
  if (!polled) {  // no poller thread: one poll here, relaxed as the poller is (it never waits)
    RelaxedCaptureMode relaxed;
    poll_once(t, false);
  }
}

void gpu_end_untimed(GpuTiming& g, const CaptureKey& key, Untimed why) {
  // The sampling's choice is made before the call; that the call could not be timed anyway
  // (ncclInProgress) is the truer reason, and a call sampled out is counted in the job's time at
  // the timed calls' mean (capture_summary's job time), which an enqueued call must not be.
  record_untimed(key, g.ok || g.why == Untimed::not_sampled ? why : g.why);
  gpu_cancel(g);
}

void gpu_cancel(GpuTiming& g) {
  if (!g.ok) return;
  give_back(timer(), g.context_id, g.start, g.end);
  g.ok = false;
}

void gpu_drain() {
  if (!driver().ok) return;
  Timer& t = timer();
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    t.closing = true;
    // Nothing in flight: no driver call at all. So it is in a forked child (the fork handler
    // dropped the parent's timings), where CUDA must not be used: a DataLoader worker's exit
    // must not touch the driver.
    if (t.pending.empty() && t.in_hand == 0) return;
  }
  // At exit the program has usually synchronized already; timings still in flight get up to a
  // second of the clock, polled as the background thread polls (never a synchronizing call);
  // then the rest are counted untimed, so that their calls stay in the table.
  RelaxedCaptureMode relaxed;
  const std::uint64_t deadline = now_ns() + 1000000000ULL;
  struct timespec ms = {0, 1000000};
  while (now_ns() < deadline) {
    if (poll_once(t, false) == 0) return;
    nanosleep(&ms, nullptr);
  }
  // the poller hands back what it holds within microseconds, and takes nothing more
  const std::uint64_t hand_back = now_ns() + 100000000ULL;
  while (now_ns() < hand_back) {
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      if (t.in_hand == 0) break;
    }
    nanosleep(&ms, nullptr);
  }
  poll_once(t, true);
}

}  // namespace opbench::capture
