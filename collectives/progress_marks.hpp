#pragma once
// How many calls a device has completed, as another thread can tell while the main thread is
// inside a call or a wait: the calls run asynchronously on a stream, so the host's count of
// calls issued says nothing about the device's. Every `every` calls the main thread records a
// marker on the stream (a CUDA event) with the count issued so far; the guard's thread asks the
// pending markers, oldest first, whether the stream has passed them, and the count of the newest
// passed one is the progress. A marker every call would add an event record to every launch of
// a launch-bound case; every few calls costs nothing a sample shows and delays what the guard
// sees by a few calls.
//
// The markers sit in a fixed ring. When the host runs so far ahead of the device that every
// marker is still pending, a mark is skipped rather than a pending marker reused: recording an
// event again forgets what it recorded before. Both threads touch the markers only under the
// ring's lock. Free of CUDA: the caller passes how to record and ask a marker, so the bookkeeping
// is tested on the host (tests/unit/test_progress_marks.cpp).
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace opbench {

class ProgressMarks {
 public:
  ProgressMarks(std::size_t slots, int every) : count_(slots, 0), every_(every > 0 ? every : 1) {}

  int every() const { return every_; }

  // At most how many calls are issued from one marker to the next when they are issued
  // `at_once` at a time (one per launch; -n per CUDA-graph replay): a marker goes after the
  // first batch that brings the calls since the last one to `every`, so batches of 3 against
  // every 8 are marked every third batch, 9 calls. The guard's allowance rests on this.
  static std::int64_t calls_between_marks(int every, std::int64_t at_once) {
    every = every > 0 ? every : 1;
    at_once = at_once > 0 ? at_once : 1;
    return (every + at_once - 1) / at_once * at_once;
  }

  // Main thread, after issuing `calls` more calls. On every `every`-th call issued, `record(slot)`
  // records a marker in that slot and returns whether it could; nothing happens when every slot
  // is pending.
  template <class Record>
  void issued(std::int64_t calls, Record&& record) {
    issued_ += calls;
    if (issued_ - marked_ < every_) return;
    std::lock_guard lock(mutex_);
    if (pending_ == count_.size()) return;  // the device is far behind: mark later
    const std::size_t slot = (oldest_ + pending_) % count_.size();
    if (!record(slot)) return;
    count_[slot] = issued_;
    ++pending_;
    marked_ = issued_;
  }

  // Main thread: the stream is idle, so every call issued has completed (and every marker passed).
  void all_done() {
    std::lock_guard lock(mutex_);
    pending_ = 0;
    completed_ = issued_;
  }

  // The guard's thread: asks the pending markers, oldest first, `passed(slot)` true when the
  // stream has passed that one, and returns the calls known to have completed.
  template <class Passed>
  std::int64_t completed(Passed&& passed) {
    std::lock_guard lock(mutex_);
    while (pending_ > 0 && passed(oldest_)) {
      completed_ = count_[oldest_];
      oldest_ = (oldest_ + 1) % count_.size();
      --pending_;
    }
    return completed_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::int64_t> count_;  // by slot: calls issued when its marker was recorded
  std::size_t oldest_ = 0, pending_ = 0;
  std::int64_t completed_ = 0;            // guarded by mutex_
  std::int64_t issued_ = 0, marked_ = 0;  // main thread only
  int every_;
};

}  // namespace opbench
