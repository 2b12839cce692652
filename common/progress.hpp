#pragma once
// Progress on stderr, one line per finished case: "[12/120] <what happened>  ETA 3m20s".
// Never on stdout, so tables and CSV stay clean; --quiet turns it off.
#include <cstddef>
#include <string>

#include "common/timer.hpp"

namespace opbench {

class Progress {
 public:
  Progress(std::size_t total, bool quiet) : total_(total), quiet_(quiet) {}
  void done(const std::string& what);
  void note(const std::string& line) const;  // a free-form line (backend choice, where files go)

 private:
  std::size_t total_, finished_ = 0;
  bool quiet_;
  CpuTimer clock_;
};

// "45s", "3m20s", "1h05m"
std::string human_duration(double seconds);

}  // namespace opbench
