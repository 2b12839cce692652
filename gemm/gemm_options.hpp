#pragma once
// bench_gemm's command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/dtype.hpp"
#include "common/job_shapes.hpp"
#include "gemm/fp8_policy.hpp"
#include "gemm/gemm_cases.hpp"
#include "gemm/model_gemms.hpp"

namespace opbench {

struct GemmOptions {
  std::string backend = "auto";
  int device = 0;
  std::string model_config_path;  // empty: configs/models.json when --model is given
  std::string models;             // comma-separated names, empty: all
  std::string shapes_path;
  JobShapesOptions job;  // --capture-path / --trace-path, --rank: a real job's GEMMs
  std::vector<std::int64_t> ms, ns, ks;
  std::int64_t sweep_batch = 1;
  std::string layout = "NN";
  std::optional<std::vector<DType>> dtypes;  // default: bf16 on the GPU, fp32 on the CPU
  std::int64_t tp = 1;
  std::int64_t cp = 1;  // context parallelism: the GEMMs of a rank's seq / cp tokens
  std::vector<std::int64_t> micro_batches{1};
  std::vector<std::int64_t> seqlens;  // empty: each model's own
  std::vector<GemmPass> passes{GemmPass::fprop, GemmPass::dgrad, GemmPass::wgrad};
  std::vector<std::string> layers;  // --gemm: the model layers to run, empty: all
  MoeRun moe;
  bool check = false, cold = false, dry_run = false, list_models = false;
  std::string device_profile;  // --dry-run for a GPU that is not here (configs/cudnn_devices.json)
  bool corrupt_for_test = false;
  int algo_candidates = 8;
  Fp8Accumulation fp8_accum = Fp8Accumulation::by_pass;
  MeasureOverrides measure;  // on top of the backend's defaults
  ReportOptions report;
  PeakOverrides peaks;

  bool wants_models() const { return !model_config_path.empty() || !models.empty(); }
  bool wants_sweep() const { return !ms.empty(); }
};

// nullopt after --help.
std::optional<GemmOptions> parse_gemm_options(int argc, char** argv);

}  // namespace opbench
