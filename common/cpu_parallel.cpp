#include "common/cpu_parallel.hpp"

#include <cblas.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace opbench {

namespace {
std::atomic<unsigned> thread_cap{0};  // limit_cpu_threads; 0: none

// How long a waiting thread spins before it sleeps: long enough to catch the next call of a
// timing loop (samples follow each other within microseconds), short enough not to take a core
// from a BLAS call that follows. A woken thread costs tens of microseconds on a VM.
constexpr auto kSpin = std::chrono::microseconds(50);

template <typename Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done())
    if (std::chrono::steady_clock::now() > until) return false;
  return true;
}

// True on the pool's threads, and on a caller while its items run: a parallel_for inside an
// item runs on its own thread.
thread_local bool t_inside = false;

// The threads parallel_for runs on, started once and kept, as OpenMP's team and PyTorch's intra-op
// pool are: starting threads on every call would time their creation with each small operator
// (two threads made a 35 µs swiglu take 46-104 µs here). Never destroyed: a worker may be asleep
// in it when the process exits.
class Pool {
 public:
  // Runs work over [0, items) on the caller and `helpers` pool threads (fewer when the system
  // refuses threads); false when the pool is busy with another caller's work or has no thread
  // at all (the caller then runs it alone).
  bool run(std::int64_t items, unsigned helpers, const std::function<void(std::int64_t)>& work) {
    std::unique_lock call(call_mutex_, std::try_to_lock);
    if (!call.owns_lock()) return false;
    // A worker counts once its thread runs: a thread refused (EAGAIN under a pids or process
    // limit) would otherwise be waited for by every later call. The call goes on with the
    // workers there are; the next call tries again for the rest.
    while (workers_ < helpers && start_worker(workers_))
      ++workers_;
    helpers = std::min(helpers, workers_);
    if (helpers == 0) return false;
    work_ = &work;
    items_ = items;
    next_.store(0);
    error_ = nullptr;
    pending_.store(static_cast<int>(helpers));
    {
      std::lock_guard lock(mutex_);
      // a new call, and how many helpers it wants, in one value: a thread that wakes late
      // reads both of the same call
      job_.store(((job_.load() >> 16) + 1) << 16 | helpers, std::memory_order_release);
    }
    wake_.notify_all();
    t_inside = true;
    take_items();
    t_inside = false;
    if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }

  pid_t owner = getpid();  // a forked child gets a pool of its own: it has none of these threads

 private:
  // False when the system refuses the thread.
  bool start_worker(unsigned index) try {
    // the job value before the call that starts it: a thread that read it once running might
    // already see that call's, and wait for the next one while the call waits for it
    std::thread([this, index, seen = job_.load()]() mutable {
      t_inside = true;
      for (;;) {
        if (!spin_until([&] { return job_.load(std::memory_order_acquire) != seen; })) {
          std::unique_lock lock(mutex_);
          wake_.wait(lock, [&] { return job_.load(std::memory_order_acquire) != seen; });
        }
        seen = job_.load(std::memory_order_acquire);
        if (index >= (seen & 0xffff)) continue;  // this call wants fewer threads
        take_items();
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          std::lock_guard lock(mutex_);
          done_.notify_one();
        }
      }
    }).detach();
    return true;
  } catch (const std::system_error&) {
    return false;
  }

  void take_items() {
    try {
      for (std::int64_t i = next_++; i < items_; i = next_++)
        (*work_)(i);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(items_);  // the others stop at their next item
    }
  }

  std::mutex call_mutex_;  // one caller at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<std::uint64_t> job_{0};  // the call's number << 16 | its helpers
  std::atomic<std::int64_t> next_{0};
  std::atomic<int> pending_{0};
  const std::function<void(std::int64_t)>* work_ = nullptr;
  std::int64_t items_ = 0;
  unsigned workers_ = 0;
  std::exception_ptr error_;
};

Pool& pool() {
  static std::mutex made;
  static Pool* p = nullptr;
  std::lock_guard lock(made);
  if (p == nullptr || p->owner != getpid()) p = new Pool;  // leaked on purpose (see Pool)
  return *p;
}
}  // namespace

void limit_cpu_threads(unsigned threads, unsigned blas_threads) {
  thread_cap = threads;
  openblas_set_num_threads(static_cast<int>(blas_threads > 0 ? blas_threads : usable_cores()));
}

unsigned usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned parallel_threads(std::int64_t items) {
  const unsigned cap = thread_cap.load();
  const unsigned cores = cap > 0 ? cap : usable_cores();
  return static_cast<unsigned>(std::clamp<std::int64_t>(items, 1, cores));
}

void parallel_for(std::int64_t items, const std::function<void(std::int64_t)>& work) {
  struct BlasThreads {  // restored however the work ends
    int saved = openblas_get_num_threads();
    BlasThreads() { openblas_set_num_threads(1); }
    ~BlasThreads() { openblas_set_num_threads(saved); }
  } blas;
  const unsigned threads = parallel_threads(items);
  // One thread wanted, a call from inside an item, the pool busy with another thread's work, or
  // no thread to be had: the caller runs every item itself.
  if (threads <= 1 || t_inside || !pool().run(items, threads - 1, work))
    for (std::int64_t i = 0; i < items; ++i)
      work(i);
}

}  // namespace opbench
