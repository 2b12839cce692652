#include "common/progress.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace opbench {

std::string human_duration(double seconds) {
  auto s = static_cast<long>(std::lround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

void Progress::done(const std::string& what) {
  ++finished_;
  if (quiet_) return;
  double elapsed = clock_.elapsed_s();
  std::string eta;
  if (finished_ < total_)
    eta = "  ETA " + human_duration(elapsed / static_cast<double>(finished_) * static_cast<double>(total_ - finished_));
  std::fprintf(stderr, "[%zu/%zu] %s%s\n", finished_, total_, what.c_str(), eta.c_str());
  std::fflush(stderr);
}

void Progress::note(const std::string& line) const {
  if (quiet_) return;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace opbench
