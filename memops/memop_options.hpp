#pragma once
// bench_memops's command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/dtype.hpp"
#include "memops/memop.hpp"
#include "memops/memop_cases.hpp"

namespace opbench {

struct MemopOptions {
  std::string backend = "auto";
  int device = 0;
  std::string providers;  // --provider: empty = every provider of the backend
  std::string model_config_path, models, shapes_path;
  std::vector<MemOp> ops;  // --op, empty: every operator
  std::vector<MemPass> passes{MemPass::fwd, MemPass::bwd};
  std::vector<std::int64_t> sizes;  // --size: a sweep
  std::int64_t cols = 4096, vocab = 32768;
  MemopModelRun model_run;
  std::int64_t cp = 1;  // --model: context parallelism, a rank's seq / cp tokens
  std::optional<std::vector<DType>> dtypes;  // default: bf16 on the GPU, fp32 on the CPU
  bool check = false, cold = false, dry_run = false, list_models = false;
  bool corrupt_for_test = false;
  MeasureOverrides measure;
  ReportOptions report;
  PeakOverrides peaks;

  bool wants_models() const { return !model_config_path.empty() || !models.empty(); }
};

// nullopt after --help.
std::optional<MemopOptions> parse_memop_options(int argc, char** argv);

}  // namespace opbench
