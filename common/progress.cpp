#include "common/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

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

std::string Progress::eta() const {
  if (work_done_ <= 0 || total_work_ <= work_done_) return "";
  return "  ETA " + human_duration(clock_.elapsed_s() / work_done_ * (total_work_ - work_done_));
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
