#include "fsdp/fsdp_options.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "collectives/ccl_options.hpp"
#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {

namespace {

cxxopts::Options fsdp_flags() {
  cxxopts::Options options(
      "bench_fsdp",
      "FSDP communication: the exact per-step plan of a model (units, padded per-rank\n"
      "counts, all-gathers, reduce-scatters, HSDP all-reduces), NCCL log comparison, and\n"
      "a replay of the plan's collectives under mpirun:\n"
      "  bench_fsdp --model llama3.1-70b --world-size 8 --dry-run\n"
      "  mpirun -np 8 bench_fsdp --model llama3.1-70b");
  // clang-format off
  options.add_options("Model")
    ("model-config-path", "models.json (default configs/models.json)", cxxopts::value<std::string>())
    ("model", "the model", cxxopts::value<std::string>())
    ("list-models", "list the models of the config and exit")
    ("world-size", "ranks FSDP shards over (default: the mpirun world size)", cxxopts::value<std::string>())
    ("fsdp-version", "1 (flat parameter padded to the world size) or 2 (each parameter's dim 0 padded)", cxxopts::value<int>()->default_value("2"))
    ("wrap", "units: layer (one per decoder layer, plus the root), submodule (attention and MLP apart), model (one unit)", cxxopts::value<std::string>()->default_value("layer"))
    ("param-dtype", "all-gather dtype", cxxopts::value<std::string>()->default_value("bf16"))
    ("grad-dtype", "gradient reduction dtype: reduce-scatter (and HSDP all-reduce), fp32 or bf16", cxxopts::value<std::string>()->default_value("fp32"))
    ("redop", "reduce-scatter reduction: avg (as FSDP does; timed as sum on the mpi backend) or sum", cxxopts::value<std::string>()->default_value("avg"))
    ("sharding", "fsdp (shard over every rank) or hsdp (shard within --shard-group ranks, all-reduce across the groups); default hsdp when --shard-group is given", cxxopts::value<std::string>())
    ("shard-group", "HSDP: shard within groups of this many ranks, all-reduce across the groups", cxxopts::value<std::string>())
    ("no-reshard-after-forward", "keep units gathered from forward to backward (no backward all-gathers)");
  // The spellings bench_fsdp had before bench_step and bench_ccl set the shared vocabulary.
  options.add_options(kAliasGroup)
    ("reduce-dtype", "old spelling of --grad-dtype", cxxopts::value<std::string>())
    ("reduce-op", "old spelling of --redop", cxxopts::value<std::string>())
    ("shard-group-size", "old spelling of --shard-group", cxxopts::value<std::string>());
  options.add_options("Plan and logs")
    ("dry-run", "print the plan and the equivalent nccl-tests commands, run nothing")
    ("plan-csv-path", "write the plan as CSV", cxxopts::value<std::string>())
    ("nccl-log", "an NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL log to summarise and match (repeatable)", cxxopts::value<std::vector<std::string>>());
  options.add_options("Run (under mpirun)")
    ("backend", "auto, nccl or mpi", cxxopts::value<std::string>()->default_value("auto"))
    ("device-offset", "GPU of a rank = its local rank + this", cxxopts::value<int>()->default_value("0"))
    ("device", "every rank uses this GPU index (as $NCCL_TESTS_DEVICE)", cxxopts::value<int>())
    ("n,iters", "calls per timed sample of a collective (samples repeat until the mean is precise)", cxxopts::value<int>()->default_value("20"))
    ("w,warmup-iters", "untimed calls first", cxxopts::value<int>()->default_value("5"))
    ("c,check", "verified calls after timing", cxxopts::value<int>()->default_value("1"))
    ("timeout", "seconds a collective may go without a call completing (plus one call's time), or a step of the run's start or end without finishing, before the job is aborted (0: never)", cxxopts::value<double>()->default_value("300"))
    ("allgather-report-csv-path", "all-gather rows (bench_ccl's columns plus unit, phase)", cxxopts::value<std::string>())
    ("reducescatter-report-csv-path", "reduce-scatter rows", cxxopts::value<std::string>())
    ("allreduce-report-csv-path", "HSDP all-reduce rows", cxxopts::value<std::string>());
  // clang-format on
  add_measure_options(options, {{"collectives", measure_defaults(MeasureProfile::collective)}},
                      false);
  add_report_options(options, "fsdp", false);
  return options;
}

// FSDP's layout and dtypes: the version, the units, the dtypes and reduction, HSDP's groups.
void read_fsdp_config(const cxxopts::ParseResult& p, FsdpOptions& o) {
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  o.fsdp.version = p["fsdp-version"].as<int>();
  o.fsdp.wrap = parse_wrap_policy(str("wrap"));
  o.fsdp.param_dtype = parse_dtype_list(str("param-dtype"), "--param-dtype").front();
  const std::string grad_dtype = flag_or_alias(p, "grad-dtype", "reduce-dtype");
  o.fsdp.reduce_dtype = parse_dtype_list(str(grad_dtype.c_str()), "--" + grad_dtype).front();
  const std::string redop = flag_or_alias(p, "redop", "reduce-op");
  o.reduce_op = parse_red_op(str(redop.c_str()));
  if (o.reduce_op != RedOp::avg && o.reduce_op != RedOp::sum)
    throw bad_input(
        fmt::format("--{}: FSDP reduces with avg or sum, not {}", redop, red_op_name(o.reduce_op)));
  const std::string shard_group = flag_or_alias(p, "shard-group", "shard-group-size");
  if (given(p, shard_group))
    o.fsdp.shard_group_size = parse_positive_int(str(shard_group.c_str()), "--" + shard_group);
  if (given(p, "sharding")) {
    const std::string sharding = to_lower(str("sharding"));
    if (sharding == "hsdp" && !given(p, shard_group))
      throw bad_input("--sharding hsdp: give the shard group with --shard-group N");
    if (sharding == "fsdp" && given(p, shard_group))
      throw bad_input(
          "--sharding fsdp shards over every rank: --shard-group goes with --sharding "
          "hsdp");
    if (sharding == "ddp")
      throw bad_input(
          "--sharding ddp: bench_fsdp replays FSDP and HSDP; a DDP step's "
          "all-reduces are bench_step --sharding ddp's, or bench_ccl's");
    if (sharding != "fsdp" && sharding != "hsdp")
      throw bad_input(
          fmt::format("--sharding: unknown sharding '{}' (accepted: fsdp, hsdp)", str("sharding")));
  }
  o.fsdp.reshard_after_forward = p.count("no-reshard-after-forward") == 0;
}

// The replay's collectives under mpirun: the backend, -n, -w, -c and --timeout.
void read_run(const cxxopts::ParseResult& p, FsdpOptions& o) {
  read_ccl_backend_flags(p, o.backend, o.device_offset, o.device);
  o.run.iters = p["iters"].as<int>();
  o.run.warmup = p["warmup-iters"].as<int>();
  o.run.measure = resolve(MeasureProfile::collective, read_measure_overrides(p, false));
  o.run.check_passes = p["check"].as<int>();
  o.run.timeout_s = p["timeout"].as<double>();
  if (o.run.iters < 1)
    throw bad_input(fmt::format("-n/--iters: must be at least 1, got {}", o.run.iters));
  if (o.run.warmup < 0 || o.run.check_passes < 0 || !(o.run.timeout_s >= 0))
    throw bad_input("-w, -c and --timeout must not be negative");
}

}  // namespace

std::optional<FsdpOptions> parse_fsdp_options(int argc, char** argv) {
  cxxopts::Options options = fsdp_flags();
  auto parsed = parse_ccl_command_line(options, argc, argv, "bench_fsdp");
  if (!parsed) return std::nullopt;
  const auto& p = *parsed;
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  FsdpOptions o;
  o.list_models = p.count("list-models") > 0;
  if (!p.count("model") && !o.list_models)
    throw bad_input(
        "--model is required (a model of configs/models.json; --list-models lists them)");
  if (p.count("model")) o.model = str("model");
  if (p.count("model-config-path")) o.model_config_path = str("model-config-path");
  if (p.count("world-size")) {
    auto text = str("world-size");
    if (trim(text) == "0") throw bad_input("--world-size: must be at least 1, got 0");
    o.world_size = parse_positive_int(text, "--world-size");
  }
  read_fsdp_config(p, o);
  o.dry_run = p.count("dry-run") > 0;
  if (p.count("plan-csv-path")) o.plan_csv_path = str("plan-csv-path");
  if (p.count("nccl-log")) o.nccl_logs = p["nccl-log"].as<std::vector<std::string>>();
  if (p.count("allgather-report-csv-path")) o.allgather_csv = str("allgather-report-csv-path");
  if (p.count("reducescatter-report-csv-path"))
    o.reducescatter_csv = str("reducescatter-report-csv-path");
  if (p.count("allreduce-report-csv-path")) o.allreduce_csv = str("allreduce-report-csv-path");
  read_run(p, o);
  o.report = read_report_options(p);
  return o;
}

}  // namespace opbench
