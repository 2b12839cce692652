#include "common/long_case_notice.hpp"

namespace opbench {

namespace {
LongCaseNotice& current() {
  static LongCaseNotice notice;
  return notice;
}
}  // namespace

ScopedLongCaseNotice::ScopedLongCaseNotice(LongCaseNotice notice)
    : previous_(std::exchange(current(), std::move(notice))) {}

ScopedLongCaseNotice::~ScopedLongCaseNotice() {
  current() = std::move(previous_);
}

void announce_long_case(double run_s, double case_s, int runs) {
  if (case_s > kLongCaseS && current()) current()(run_s, case_s, runs);
}

}  // namespace opbench
