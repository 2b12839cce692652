#pragma once
// Progress on stderr, never on stdout, so tables and CSV stay clean. On a terminal it is one
// status line naming the case that runs now ("[12/120] llama3.1-70b mlp_down dgrad ...  ETA
// 3m20s"), cleared before each table row (call clear() before printing to stdout). Elsewhere (logs,
// CI) it is one permanent line per finished case with its result. The ETA models a case's time
// as a fixed part plus a part proportional to its work (e.g. FLOPs), fitted to the cases done
// (eta_seconds): the stop rule gives small cases about the same time each, so work alone
// overestimates a sweep that starts small. Binaries that know each case's work (bench_gemm,
// bench_attention, bench_memops) split a case's time into what the stop rule bounds (warm-up and
// sampling) and the rest (set-up, --check), so that a larger case ahead, or a check that grows
// with the cases, is counted case by case. --quiet turns it off.
#include <cstddef>
#include <string>
#include <vector>

#include "common/timer.hpp"

namespace opbench {

struct CaseTime {
  double work = 0, seconds = 0;
  // The part the stop rule bounds (warm-up and sampling, at most about warm-up time + --max-time);
  // the rest (set-up, --check) grows with the case. Negative: not known.
  double bounded = -1;
  double run = -1;  // one run's seconds (the mean sample); negative: not known
};

// The stop rule's bound on a case's warm-up and sampling: its warm-up time + --max-time, unless
// its fewest runs (warm-up and --min-samples) take longer.
struct StopBound {
  double seconds = 0;  // <= 0: not known
  int min_runs = 0;
};
struct MeasureOptions;
// What the stop rule allows a case's warm-up and sampling under `options`.
StopBound stop_bound(const MeasureOptions& options);

// Seconds left for `cases_left` cases holding `work_left` work, from the finished cases: the
// least-squares fit of seconds = a + b * work (a, b >= 0; with one case, or cases of one size,
// b = 0 and the estimate is by count), at most cases_left times the slowest case seen. Negative
// when nothing is known yet.
double eta_seconds(const std::vector<CaseTime>& done, std::size_t cases_left, double work_left);
// Seconds left for the cases of `works_left` (each case's work, in the order they run), from the
// finished cases' split: their set-up and checks fitted as a + b * work (the mean when the cases
// done were all of one size), their warm-up and sampling as a + b * work too (proportional to
// the work when they were all of one size: a run's time grows with it) but at most the stop
// bound a case (the longest seen when it is not known), or the bound's fewest runs at the run
// time the work predicts, whichever is longer. A case 16 times larger than those done then
// counts as the stop rule will make it, and a --check that grows with the case as it grows.
// Falls back on eta_seconds above when no finished case says its split.
double eta_seconds(const std::vector<CaseTime>& done, const std::vector<double>& works_left,
                   const StopBound& bound);

class Progress {
 public:
  Progress(std::size_t cases, double total_work, bool quiet);
  // Each case's work, in the order the cases run: the ETA weighs the cases left one by one.
  Progress(std::vector<double> case_works, bool quiet);
  void set_stop_bound(const StopBound& bound) { bound_ = bound; }
  void start(const std::string& what);  // the case about to run
  // The case that finished, with its figures; `bounded_s`: its warm-up and sampling seconds,
  // `run_s`: one run's (negative: not known, a case carried from an earlier report).
  void done(double work, const std::string& result, double bounded_s = -1, double run_s = -1);
  void clear();                        // erases the status line on a terminal
  void note(const std::string& line);  // a permanent line (backend choice, where files go)

 private:
  std::size_t cases_, finished_ = 0;
  double total_work_, work_done_ = 0;
  std::string eta() const;
  bool quiet_, tty_, line_shown_ = false;
  CpuTimer clock_;
  double last_done_s_ = 0;
  std::vector<CaseTime> times_;     // each finished case's work and seconds
  std::vector<double> case_works_;  // every case's, when known
  StopBound bound_;
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
