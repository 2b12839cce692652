#pragma once
// bench_ccl's command line: nccl-tests' flags with nccl-tests' meaning, plus ours.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/coll_op.hpp"
#include "collectives/coll_runner.hpp"
#include "collectives/parallel_messages.hpp"
#include "common/cli.hpp"
#include "common/dtype.hpp"
#include "common/job_shapes.hpp"

namespace opbench {

enum class Placement { out_of_place, in_place };
std::string placement_name(Placement p);

struct CclOptions {
  std::string backend = "auto";  // auto, nccl, mpi
  int device_offset = 0;
  std::optional<int> device;  // --device: every rank on this GPU index
  std::vector<CollOp> ops;
  std::vector<std::uint64_t> sizes;     // bytes
  std::string step_text = "1(factor)";  // nccl-tests' "step:" field: "2(factor)", "1048576(bytes)"
  std::vector<DType> dtypes{DType::fp32};
  std::vector<RedOp> redops{RedOp::sum};
  int root = 0;
  std::vector<Placement> placements{Placement::out_of_place, Placement::in_place};
  int group_size = 0;  // 0: the world
  CollRunOptions run;
  // Model-derived messages
  std::string model_config_path, model;
  std::int64_t tp = 1, ep = 1, pp = 1, micro_batch = 1, seqlen = 0;
  std::int64_t etp = 0;  // --etp; 0: --tp's
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  std::int64_t cp = 1;  // --cp
  DType model_dtype = DType::bf16;
  // Captured collectives (--capture-path, --rank)
  JobShapesOptions job;  // --capture-path / --trace-path, --rank
  std::string report_csv_path;
  ReportOptions report;
  bool dry_run = false, list_models = false;
  std::int64_t world_size = 0;  // --dry-run: the world to plan for (0: this launch's)

  bool wants_model() const { return !model.empty(); }
  bool wants_capture() const { return job.wanted(); }
};

// nullopt after --help.
std::optional<CclOptions> parse_ccl_options(int argc, char** argv);

// The command line of bench_ccl or bench_fsdp (`binary`), whose --version lists MPI, and CUDA and
// NCCL where built with them; nullopt after --help or --version.
std::optional<cxxopts::ParseResult> parse_ccl_command_line(cxxopts::Options& options, int argc,
                                                           char** argv, const char* binary);
// --backend, --device-offset and --device, as bench_ccl and bench_fsdp read them (bad_input naming
// the flag).
void read_ccl_backend_flags(const cxxopts::ParseResult& parsed, std::string& backend,
                            int& device_offset, std::optional<int>& device);

}  // namespace opbench
