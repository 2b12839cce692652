#pragma once
// The hand-over of a case's abort hook between two threads, at most once. The main thread opens
// the hook before a case and closes it after; a thread that ends the job (a watchdog on a timeout
// or an interrupt, the liveness thread on a lost rank) fires it. Whichever comes first wins:
// - fire first: the hook runs (rank 0 writes the running case as a failed row) and close() says
//   so, so the main thread, which may have finished the case meanwhile, writes no second row for
//   it and waits for the firing thread to end the process;
// - close first: a later fire() finds no hook, and the case keeps the row the main thread wrote.
// Firing is final: the process is ending, so a hook opened afterwards never runs and its close()
// says it fired too. No MPI here, so it is unit-tested with plain threads.
#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace opbench {

class AbortOnce {
 public:
  using Hook = std::function<void(const std::string& reason)>;

  // Main thread, before a case.
  void open(Hook hook) {
    std::lock_guard lock(mutex_);
    if (!fired_) hook_ = std::move(hook);
  }

  // Main thread, after the case (however it ended). Waits for a hook that is running to return,
  // then says whether fire() came first: true means the process is ending and the case's row, if
  // any, has been written by the firing thread.
  bool close() {
    std::lock_guard lock(mutex_);
    hook_ = nullptr;
    return fired_;
  }

  // The thread ending the job: takes the hook, once, and calls it with `reason` when `call` is
  // set (only rank 0 writes rows; another rank takes it all the same, so that its main thread
  // stops too). Returns whether a hook was there to take. Held under the mutex while the hook
  // runs, so close() cannot return while the row is half written.
  bool fire(const std::string& reason, bool call = true) {
    std::lock_guard lock(mutex_);
    fired_ = true;
    Hook hook = std::move(hook_);
    hook_ = nullptr;
    if (hook && call) hook(reason);
    return static_cast<bool>(hook);
  }

 private:
  std::mutex mutex_;
  Hook hook_;
  bool fired_ = false;
};

}  // namespace opbench
