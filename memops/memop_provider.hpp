#pragma once
// A memory-bound operator implementation that can be measured: vectorised loops over every core
// on the CPU, our own CUDA kernels on the GPU, and cuDNN's normalisation graphs beside them.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/env.hpp"
#include "common/measure.hpp"
#include "common/record.hpp"
#include "memops/memop.hpp"

namespace opbench {

struct MemopRunOptions {
  MeasureOptions measure;
  bool check = false;             // compare the result with the plain reference implementation
  bool cold = false;              // flush the cache before each sample instead of rotating buffers
  bool corrupt_for_test = false;  // test only: spoil one output element before the check
};

struct MemopResult {
  Status status = Status::ok;
  std::string note;
  Measurement measurement;
  std::string impl;   // what ran: "cpu vectorised, 2 threads", the kernel, the cuDNN engine
  std::string cache;  // "rotate" or "flush"
  std::int64_t working_set_bytes = 0;
  // With check: the largest |result - reference| over every output (relative to the output's
  // scale where the operator says so), the bound it is held to, and the verdict.
  std::optional<double> max_abs_err, tolerance;
  std::optional<bool> check_passed;
  std::string check_detail;  // which output and element failed, or the residual
};

class MemopProvider {
 public:
  virtual ~MemopProvider() = default;
  virtual std::string name() const = 0;     // "cpu", "cuda", "cudnn"
  virtual std::string backend() const = 0;  // "cpu", "cuda"
  virtual std::string device() const = 0;
  // Why this provider cannot run the case, or nullopt when it can.
  virtual std::optional<std::string> unsupported(const MemopCase& c) const = 0;
  // Measures a case unsupported() accepts: run_memop_case (memops/memop_run.hpp) asks first.
  virtual MemopResult run(const MemopCase& c, const MemopRunOptions& o) = 0;
  virtual void describe(Environment& env) const = 0;
};

// Vectorised loops over every core; --check compares with plain single-threaded loops in fp64.
std::unique_ptr<MemopProvider> make_cpu_memop_provider();
// The CPU's memory bandwidth roof: the best of six streaming loops over every core — STREAM's
// copy, scale, add and triad, a read-only sum and an in-place update (likwid-bench's loops
// without write-allocate) — on fp64 arrays of 4x the last-level cache at least, each the best of
// `repeats` runs, counted as the operators are (each byte read or written once, write-allocate
// not counted).
struct CpuMemoryRoof {
  double gbps = 0;                                    // the best loop's
  std::string best;                                   // its name: "update"
  std::vector<std::pair<std::string, double>> loops;  // every loop's GB/s, in order
};
CpuMemoryRoof measure_cpu_memory_roof(int repeats = 10);
#ifdef OPBENCH_HAVE_CUDA
std::unique_ptr<MemopProvider> make_cuda_memop_provider(int device);
// LayerNorm and RMSNorm forward and backward through cuDNN's graph API; other operators are
// unsupported().
std::unique_ptr<MemopProvider> make_cudnn_norm_provider(int device);
#endif

}  // namespace opbench
