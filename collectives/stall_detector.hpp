#pragma once
// When a case has hung, judged by progress rather than by a deadline for a whole phase: the
// timing loop counts the calls that complete, and the guard's thread looks at that count every
// so often. A sample of 3000 calls of 46 ms is 2.3 minutes of healthy work, so a deadline for
// the sample would let a stopped peer hold the job for minutes; the guard acts instead once no
// call has completed for --timeout plus the time the calls between two progress marks are
// expected to take (one call on MPI, whose calls complete before they return; a few on a GPU,
// whose stream is marked every few calls). The start of a phase counts as progress.
//
// Free of clocks and threads: the caller passes the time, so a test drives it with a stand-in
// clock (tests/unit/test_stall_detector.cpp).
#include <cstdint>

namespace opbench {

class StallDetector {
 public:
  // `timeout_s`: --timeout. `gap_s`: the time the calls between two progress marks are expected
  // to take (0 before any call was timed). `start_s`: when the phase began, on the caller's clock;
  // `completed`: the count then.
  StallDetector(double timeout_s, double gap_s, double start_s, std::int64_t completed)
      : allowance_s_(timeout_s + gap_s),
        last_progress_s_(start_s),
        first_(completed),
        completed_(completed) {}

  // The guard's look: `completed` calls counted at `now_s`. A count that moved is progress (the
  // look's time stands for the call's, so a hang is seen at most one look late). True once no
  // call has completed for longer than allowance_s().
  bool stalled(std::int64_t completed, double now_s) {
    if (completed != completed_) {
      completed_ = completed;
      last_progress_s_ = now_s;
    }
    return now_s - last_progress_s_ > allowance_s_;
  }

  double allowance_s() const { return allowance_s_; }
  double quiet_s(double now_s) const { return now_s - last_progress_s_; }
  // Calls completed since the phase began, as last seen.
  std::int64_t done() const { return completed_ - first_; }

 private:
  double allowance_s_;
  double last_progress_s_;
  std::int64_t first_, completed_;
};

}  // namespace opbench
