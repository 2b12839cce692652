#pragma once
// A GEMM implementation that can be measured: OpenBLAS on the CPU, cuBLASLt on the GPU.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/env.hpp"
#include "common/measure.hpp"
#include "common/record.hpp"
#include "common/version.hpp"
#include "gemm/freivalds.hpp"
#include "gemm/gemm_problem.hpp"

namespace opbench {

struct GemmRunOptions {
  MeasureOptions measure;
  bool cold = false;              // flush the cache before each sample instead of rotating buffers
  bool check = false;             // verify the result with Freivalds' test
  int algo_candidates = 8;        // cuBLASLt heuristic results timed before the real measurement
  bool corrupt_for_test = false;  // test only: spoil one element of C before the check
  bool fp8_fast_accum = true;     // fp8 on cuBLASLt: fast accumulation, or a split accumulator
};

struct GemmResult {
  Status status = Status::ok;
  std::string note;
  Measurement measurement;
  std::string algo;   // the algorithm that ran (cuBLASLt config, or the BLAS routine)
  std::string cache;  // "rotate" or "flush"
  std::int64_t working_set_bytes = 0;
  int launches_per_sample = 1;  // > 1: launches per timed sample (a CUDA graph, or one per expert)
  std::optional<CheckResult> check;
};

// What a row says about the provider that ran it.
struct ProviderId {
  std::string name, backend, device;
};

class GemmProvider {
 public:
  virtual ~GemmProvider() = default;
  virtual std::string name() const = 0;     // "openblas", "cublaslt"
  virtual std::string backend() const = 0;  // "cpu", "cuda"
  virtual std::string device() const = 0;   // the device's own name
  // Why this provider cannot run a dtype, or nullopt when it can.
  virtual std::optional<std::string> unsupported(DType dtype) const = 0;
  // The problem as this provider will run it (fp8 on cuBLASLt forces the TN layout).
  virtual GemmProblem as_run(GemmProblem problem, std::string* note) const {
    (void)note;
    return problem;
  }
  virtual GemmResult run(const GemmProblem& problem, const GemmRunOptions& options) = 0;
  // Adds the provider's library versions and device to the run's environment.
  virtual void describe(Environment& env) const = 0;
};

std::unique_ptr<GemmProvider> make_openblas_provider();
#ifdef OPBENCH_HAVE_CUDA
std::unique_ptr<GemmProvider> make_cublaslt_provider(int device);
LibraryVersion cublaslt_library_version();
#endif

}  // namespace opbench
