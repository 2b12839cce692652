#pragma once
// bench_attention's command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_shape.hpp"
#include "common/backend.hpp"
#include "common/cli.hpp"
#include "common/job_shapes.hpp"

namespace opbench {

struct AttentionOptions {
  std::string shapes_path, model_config_path, models;
  JobShapesOptions job;  // --capture-path / --trace-path, --rank: a real job's attention calls
  std::vector<std::int64_t> seqlens, micro_batches{1};
  std::int64_t tp = 1;  // heads of one tensor-parallel rank
  std::int64_t cp = 1;  // context parallelism: one rank's calls (context_parallel_attention)
  bool list_models = false;
  std::vector<AttentionPass> passes{AttentionPass::fwd, AttentionPass::bwd};
  std::vector<DType> dtypes;               // empty: the file's (GPU) or fp32 (CPU)
  std::optional<bool> causal;              // override the shapes' own
  std::string backend = "auto", provider;  // provider "": the backend's own
  int device = 0;
  bool check = false, dry_run = false;
  int engines_per_graph = 16;  // dry run: stop after this many configurations accept a graph
  std::string device_profile;  // --dry-run on a described GPU: a name of configs/cudnn_devices.json
                               // or a file
  std::int64_t check_heads = 4;
  std::string report_csv_path;
  MeasureOverrides measure;  // on top of the backend's defaults
  ReportOptions report;
  PeakOverrides peaks;
};

std::optional<AttentionOptions> parse_attention_options(int argc, char** argv);

// The user's measurement flags on the CPU: a CPU attention case runs for a second or more, so 3
// samples (not the CPU profile's 5) already give a spread, unless the user set the sample counts.
MeasureOverrides attention_cpu_measure(MeasureOverrides user);
// Attention's measurement options on `backend`: the backend's profile, with the CPU's fewer
// samples (attention_cpu_measure), under the user's flags.
MeasureOptions attention_measure(Backend backend, const MeasureOverrides& user);

}  // namespace opbench
