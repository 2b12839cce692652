#include "common/progress.hpp"

#include "common/measure.hpp"

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

StopBound stop_bound(const MeasureOptions& o) {
  return {o.warmup_time_s + o.max_time_s, o.warmup_iters + o.min_samples};
}

namespace {

// seconds = a + b * work, least squares with a, b >= 0; `spread` false when the cases were all of
// one size (then b is 0 and a their mean).
struct Line {
  double a = 0, b = 0;
  bool spread = false;
};

Line fit(const std::vector<std::pair<double, double>>& points) {
  const double n = static_cast<double>(points.size());
  double sw = 0, st = 0, sww = 0, swt = 0;
  for (const auto& [w, t] : points) {
    sw += w;
    st += t;
    sww += w * w;
    swt += w * t;
  }
  const double mean_w = sw / n, mean_t = st / n;
  const double var_w = sww / n - mean_w * mean_w;
  Line l;
  l.spread = var_w > 1e-12 * mean_w * mean_w;
  l.b = l.spread ? (swt / n - mean_w * mean_t) / var_w : 0;
  l.a = mean_t - l.b * mean_w;
  if (l.b < 0) {  // bigger cases went faster: no work term, time by count
    l.b = 0;
    l.a = mean_t;
  } else if (l.a < 0) {  // no fixed part: time by work alone
    l.a = 0;
    l.b = sw > 0 ? st / sw : 0;
  }
  return l;
}

}  // namespace

double eta_seconds(const std::vector<CaseTime>& done, const std::vector<double>& works_left,
                   const StopBound& bound) {
  std::vector<std::pair<double, double>> other, bounded;
  double longest = 0, sw = 0, sb = 0, run_work = 0, run_s = 0;
  for (const CaseTime& c : done) {
    if (c.bounded < 0) continue;
    other.emplace_back(c.work, std::max(0.0, c.seconds - c.bounded));
    bounded.emplace_back(c.work, c.bounded);
    longest = std::max(longest, c.bounded);
    sw += c.work;
    sb += c.bounded;
    if (c.run > 0) {
      run_work += c.work;
      run_s += c.run;
    }
  }
  if (bounded.empty()) {
    double work_left = 0;
    for (double w : works_left)
      work_left += w;
    return eta_seconds(done, works_left.size(), work_left);
  }
  const Line set_up = fit(other), sampling = fit(bounded);
  const double cap = bound.seconds > 0 ? std::max(bound.seconds, longest) : longest;
  double left = 0;
  for (double w : works_left) {
    const double s =
        sampling.spread ? sampling.a + sampling.b * w : (sw > 0 ? sb / sw * w : sampling.a);
    // the fewest runs at the run time this work predicts, when they outlast the bound
    const double fewest = run_work > 0 ? bound.min_runs * run_s / run_work * w : 0;
    left += set_up.a + set_up.b * w + std::min(s, std::max(cap, fewest));
  }
  return left;
}

double eta_seconds(const std::vector<CaseTime>& done, std::size_t cases_left, double work_left) {
  if (done.empty()) return -1;
  std::vector<std::pair<double, double>> points;
  for (const CaseTime& c : done)
    points.emplace_back(c.work, c.seconds);
  const Line line = fit(points);
  const double a = line.a, b = line.b;
  // The stop rule bounds a case's time (--max-time), so a line through the growing cases must
  // not run past it: no case left is taken to be slower than the slowest one seen.
  double slowest = 0;
  for (const CaseTime& c : done)
    slowest = std::max(slowest, c.seconds);
  const double left = static_cast<double>(cases_left);
  return std::min(a * left + b * std::max(0.0, work_left), slowest * left);
}

Progress::Progress(std::vector<double> case_works, bool quiet)
    : Progress(case_works.size(), 0, quiet) {
  for (double w : case_works)
    total_work_ += w;
  case_works_ = std::move(case_works);
}

std::string Progress::eta() const {
  if (finished_ >= cases_) return "";
  const double left =
      case_works_.size() == cases_
          ? eta_seconds(
                times_,
                std::vector<double>(case_works_.begin() + static_cast<std::ptrdiff_t>(finished_),
                                    case_works_.end()),
                bound_)
          : eta_seconds(times_, cases_ - finished_, total_work_ - work_done_);
  return left < 0 ? "" : "  ETA " + human_duration(left);
}

void Progress::start(const std::string& what) {
  if (quiet_ || !tty_) return;
  std::fprintf(stderr, "\r\033[K[%zu/%zu] %s ...%s", finished_ + 1, cases_, what.c_str(),
               eta().c_str());
  std::fflush(stderr);
  line_shown_ = true;
}

void Progress::done(double work, const std::string& result, double bounded_s, double run_s) {
  ++finished_;
  work_done_ += work;
  const double now = clock_.elapsed_s();
  times_.push_back({work, now - last_done_s_, bounded_s, run_s});
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
