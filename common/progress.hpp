#pragma once
// Progress on stderr, never on stdout, so tables and CSV stay clean. On a terminal it is one
// status line naming the case that runs now ("[12/120] llama3.1-70b mlp_down dgrad ...  ETA
// 3m20s"), cleared before each table row (call clear() before printing to stdout). Elsewhere (logs,
// CI) it is one permanent line per finished case with its result. The ETA weighs each case by its
// work (e.g. FLOPs), not by count. --quiet turns it off.
#include <cstddef>
#include <string>

#include "common/timer.hpp"

namespace opbench {

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
};

// "45s", "3m20s", "1h05m"
std::string human_duration(double seconds);

}  // namespace opbench
