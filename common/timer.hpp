#pragma once
// Wall-clock timing on the host. GPU work is timed with CudaEventTimer (common/cuda).
#include <chrono>

namespace opbench {

class CpuTimer {
 public:
  CpuTimer() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double elapsed_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  double elapsed_s() const { return elapsed_us() * 1e-6; }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace opbench
