#pragma once
// Progress on stderr, never on stdout, so tables and CSV stay clean. On a terminal it is one
// status line naming the case that runs now ("[12/120] llama3.1-70b mlp_down dgrad ...  ETA
// 3m20s"), cleared before each table row (call clear() before printing to stdout). Elsewhere (logs,
// CI) it is one permanent line per finished case with its result. The ETA models a case's time
// as a fixed part plus a part proportional to its work (e.g. FLOPs), fitted to the cases done
// (eta_seconds): the stop rule gives small cases about the same time each, so work alone
// overestimates a sweep that starts small. --quiet turns it off.
#include <cstddef>
#include <string>
#include <vector>

#include "common/timer.hpp"

namespace opbench {

struct CaseTime {
  double work = 0, seconds = 0;
};

// Seconds left for `cases_left` cases holding `work_left` work, from the finished cases: the
// least-squares fit of seconds = a + b * work (a, b >= 0; with one case, or cases of one size,
// b = 0 and the estimate is by count), at most cases_left times the slowest case seen. Negative
// when nothing is known yet.
double eta_seconds(const std::vector<CaseTime>& done, std::size_t cases_left, double work_left);

class Progress {
 public:
  Progress(std::size_t cases, double total_work, bool quiet);
  void start(const std::string& what);                // the case about to run
  void done(double work, const std::string& result);  // the case that finished, with its figures
  void clear();                                       // erases the status line on a terminal
  void note(const std::string& line);  // a permanent line (backend choice, where files go)

 private:
  std::size_t cases_, finished_ = 0;
  double total_work_, work_done_ = 0;
  std::string eta() const;
  bool quiet_, tty_, line_shown_ = false;
  CpuTimer clock_;
  double last_done_s_ = 0;
  std::vector<CaseTime> times_;  // each finished case's work and seconds
};

// "45s", "3m20s", "1h05m"
std::string human_duration(double seconds);

// One way of writing figures in every binary's progress lines:
// a time in us below 1 ms, in ms below 1 s, else in s ("571.8 us", "12.3 ms", "1.25 s");
std::string time_text(double microseconds);
// a rate in TFLOPS from 1 TFLOPS up, else in GFLOPS ("312.4 TFLOPS", "58.7 GFLOPS");
std::string flops_rate_text(double tflops);
// a bandwidth in GB/s with three significant digits ("0.890 GB/s", "187 GB/s").
std::string bandwidth_text(double gbps);

}  // namespace opbench
