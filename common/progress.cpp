#include "common/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/record.hpp"

namespace opbench {

std::string human_duration(double seconds) {
  auto s = static_cast<long>(std::lround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

Progress::Progress(std::size_t cases, double total_work, bool quiet)
    : cases_(cases), total_work_(total_work), quiet_(quiet), tty_(isatty(fileno(stderr)) != 0) {}

double eta_seconds(const std::vector<CaseTime>& done, std::size_t cases_left, double work_left) {
  if (done.empty()) return -1;
  const double n = static_cast<double>(done.size());
  double sw = 0, st = 0, sww = 0, swt = 0;
  for (const CaseTime& c : done) {
    sw += c.work;
    st += c.seconds;
    sww += c.work * c.work;
    swt += c.work * c.seconds;
  }
  const double mean_w = sw / n, mean_t = st / n;
  const double var_w = sww / n - mean_w * mean_w;
  double b = var_w > 1e-12 * mean_w * mean_w ? (swt / n - mean_w * mean_t) / var_w : 0;
  double a = mean_t - b * mean_w;
  if (b < 0) {  // bigger cases went faster: no work term, time by count
    b = 0;
    a = mean_t;
  } else if (a < 0) {  // no fixed part: time by work alone
    a = 0;
    b = sw > 0 ? st / sw : 0;
  }
  // The stop rule bounds a case's time (--max-time), so a line through the growing cases must
  // not run past it: no case left is taken to be slower than the slowest one seen.
  double slowest = 0;
  for (const CaseTime& c : done)
    slowest = std::max(slowest, c.seconds);
  const double left = static_cast<double>(cases_left);
  return std::min(a * left + b * std::max(0.0, work_left), slowest * left);
}

std::string Progress::eta() const {
  if (finished_ >= cases_) return "";
  const double left = eta_seconds(times_, cases_ - finished_, total_work_ - work_done_);
  return left < 0 ? "" : "  ETA " + human_duration(left);
}

void Progress::start(const std::string& what) {
  if (quiet_ || !tty_) return;
  std::fprintf(stderr, "\r\033[K[%zu/%zu] %s ...%s", finished_ + 1, cases_, what.c_str(),
               eta().c_str());
  std::fflush(stderr);
  line_shown_ = true;
}

void Progress::done(double work, const std::string& result) {
  ++finished_;
  work_done_ += work;
  const double now = clock_.elapsed_s();
  times_.push_back({work, now - last_done_s_});
  last_done_s_ = now;
  if (quiet_) return;
  if (tty_) {
    clear();
    return;
  }
  std::fprintf(stderr, "[%zu/%zu] %s%s\n", finished_, cases_, result.c_str(),
               finished_ < cases_ ? eta().c_str() : "");
  std::fflush(stderr);
}

void Progress::clear() {
  if (!line_shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  line_shown_ = false;
}

void Progress::note(const std::string& line) {
  if (quiet_) return;
  clear();
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

std::string time_text(double us) {
  if (us < 1e3) return fmt::format("{:.1f} us", us);
  if (us < 1e6) return fmt::format("{:.1f} ms", us / 1e3);
  return fmt::format("{:.2f} s", us / 1e6);
}

std::string flops_rate_text(double tflops) {
  return tflops >= 1 ? fmt::format("{:.1f} TFLOPS", tflops)
                     : fmt::format("{:.1f} GFLOPS", tflops * 1e3);
}

std::string bandwidth_text(double gbps) {
  return fmt::format("{} GB/s", format_for_people(Value{gbps}));
}

}  // namespace opbench
