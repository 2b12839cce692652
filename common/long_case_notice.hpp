#pragma once
// A case that will take minutes says so as soon as its first run shows it (issue 30 item 8):
// measure() reports the time of that run and the time the case is bound to take, and whoever
// shows progress (CaseLoop) says it. A scoped setter, so measure() stays free of progress.
#include <functional>
#include <utility>

namespace opbench {

// run_s: the first run's time; case_s: the least the case will take (warm-up runs and
// --min-samples samples of that length).
using LongCaseNotice = std::function<void(double run_s, double case_s, int runs)>;

constexpr double kLongCaseS = 30;  // a case bound to take longer than this is announced

class ScopedLongCaseNotice {
 public:
  explicit ScopedLongCaseNotice(LongCaseNotice notice);
  ~ScopedLongCaseNotice();
  ScopedLongCaseNotice(const ScopedLongCaseNotice&) = delete;
  ScopedLongCaseNotice& operator=(const ScopedLongCaseNotice&) = delete;

 private:
  LongCaseNotice previous_;
};

// Called by measure() after the first run of a case.
void announce_long_case(double run_s, double case_s, int runs);

}  // namespace opbench
