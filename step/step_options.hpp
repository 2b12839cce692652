#pragma once
// bench_step's command line: the training configuration(s) to project and where the operators'
// times come from. Lists in --micro-batch, --tp, --pp, --dp and --recompute give one
// configuration per combination.
#include <optional>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/cli.hpp"
#include "common/job_shapes.hpp"
#include "common/measure.hpp"
#include "step/step_config.hpp"

namespace opbench {

struct StepOptions {
  std::string model_config_path, model;
  bool list_models = false;
  StepConfig base;  // everything but the listed flags below
  std::vector<std::int64_t> micro_batches{1}, tps{1}, pps{1}, dps{1};
  std::vector<Recompute> recomputes{Recompute::none};
  std::vector<Kernels> kernels{Kernels::fused};
  std::optional<OptimizerImpl> optimizer_impl;  // default: default_optimizer_impl
  std::optional<MoeImpl> moe_impl;  // default: grouped with fused kernels, loop with eager ones
  unsigned threads = 0;         // --threads: our CPU loops' threads (0: the affinity mask's cores)
  unsigned blas_threads = 0;    // --blas-threads: OpenBLAS's (0: --threads, else the cores)
  std::int64_t world_size = 0;  // --world-size: dp = world / (tp · pp)
  std::optional<DType> dtype;   // default: fp32 when measuring on the CPU, else bf16
  bool measure = true;          // --measure (the default without --from-reports)
  std::vector<std::string> from_reports;
  JobShapesOptions job;  // --capture-path / --trace-path: a job's own times, which win
  std::string backend = "auto";
  int device = 0;
  bool check = false, dry_run = false;
  std::string operators_csv_path;  // --operators-csv-path: the operator list (default in DIR)
  MeasureOverrides measure_flags;
  ReportOptions report;
  std::string report_csv_path;  // --report-csv-path: the configurations' rows
  PeakOverrides peaks;
  std::optional<double> memory_capacity_gib;  // --memory-capacity-gib: instead of the device's
  bool fits_only = false;                     // --fits-only: drop what does not fit
};

// nullopt after --help / --version.
std::optional<StepOptions> parse_step_options(int argc, char** argv);

// The optimizer a kernel plan runs unless --optimizer-impl says: fused with fused kernels; with
// eager ones what PyTorch's torch.optim.AdamW picks on the device: its for-loop (single) on the
// CPU, its multi-tensor foreach kernels on CUDA.
OptimizerImpl default_optimizer_impl(Kernels kernels, Backend device);

// Every configuration the lists make, in order (kernels, micro-batch, tp, pp, dp, recompute),
// validated. `device`: where the times come from, for default_optimizer_impl.
std::vector<StepConfig> step_configurations(const StepOptions& o, const ModelConfig& model,
                                            DType dtype, Backend device);

}  // namespace opbench
