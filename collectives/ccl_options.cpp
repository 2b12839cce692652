#include "collectives/ccl_options.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "collectives/backend_select.hpp"
#include "common/error.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"
#include "common/version.hpp"

namespace opbench {

std::string placement_name(Placement p) {
  return p == Placement::in_place ? "in_place" : "out_of_place";
}

namespace {

std::vector<Placement> parse_placements(const std::string& text) {
  std::vector<Placement> out;
  for (const auto& item : split(text, ',')) {
    std::string key = to_lower(item);
    if (key == "out_of_place" || key == "out-of-place" || key == "oop")
      push_once(out, Placement::out_of_place, "--placement", item);
    else if (key == "in_place" || key == "in-place" || key == "ip")
      push_once(out, Placement::in_place, "--placement", item);
    else if (key == "both")
      return {Placement::out_of_place, Placement::in_place};
    else
      throw bad_input(fmt::format(
          "--placement: unknown placement '{}' (accepted: out_of_place, in_place, both)", item));
  }
  if (out.empty()) throw bad_input("--placement: empty list");
  return out;
}

std::vector<RedOp> parse_red_ops(const std::string& text) {
  if (to_lower(trim(text)) == "all")
    return {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
  std::vector<RedOp> out;
  for (const auto& item : split(text, ','))
    push_once(out, parse_red_op(item), "-o/--redop", item);
  if (out.empty()) throw bad_input("-o/--redop: empty list");
  return out;
}

std::vector<DType> parse_ccl_dtypes(const std::string& text, const std::string& flag) {
  if (to_lower(trim(text)) == "all")
    return {DType::int8,  DType::uint8,  DType::int32,    DType::uint32,
            DType::int64, DType::uint64, DType::fp16,     DType::fp32,
            DType::fp64,  DType::bf16,   DType::fp8_e4m3, DType::fp8_e5m2};
  auto out = parse_dtype_list(text, flag);
  for (DType t : out)
    if (t == DType::tf32)
      throw bad_input(flag + ": tf32 is a compute mode, not a collective data type");
  return out;
}

// The flags, as --help lists them: nccl-tests' with nccl-tests' meaning, then ours.
cxxopts::Options ccl_flags() {
  cxxopts::Options options(
      "bench_ccl",
      "Collectives benchmark with nccl-tests semantics, under mpirun:\n"
      "  mpirun -np 8 bench_ccl -b 8 -e 8G -f 2 --op all_reduce,all_gather\n"
      "NCCL on device buffers (--backend nccl) or MPI on host buffers (--backend mpi).");
  // clang-format off
  options.add_options("Operations")
    ("op", "collectives, comma-separated, or all: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv", cxxopts::value<std::string>()->default_value("all"))
    ("b,minbytes", "smallest size (nccl-tests: max(send, recv) bytes per rank)", cxxopts::value<std::string>()->default_value("32M"))
    ("e,maxbytes", "largest size", cxxopts::value<std::string>()->default_value("32M"))
    ("f,stepfactor", "multiply the size by this between sizes", cxxopts::value<std::string>()->default_value("1"))
    ("i,stepbytes", "add this many bytes between sizes (when -f is 1)", cxxopts::value<std::string>()->default_value("1M"))
    ("sizes", "explicit sizes instead of -b/-e, comma-separated (64K,1M,...)", cxxopts::value<std::string>())
    ("dtype", "data types, comma-separated, or all: fp32, fp16, bf16, fp64, fp8_e4m3, fp8_e5m2, int8, uint8, int32, int64 (as every binary spells it; -d/--datatype is nccl-tests' name)", cxxopts::value<std::string>()->default_value("fp32"))
    ("d,datatype", "nccl-tests' name of --dtype", cxxopts::value<std::string>())
    ("o,redop", "reduction ops, comma-separated, or all: sum, prod, min, max, avg", cxxopts::value<std::string>()->default_value("sum"))
    ("r,root", "root rank of broadcast and reduce (-1: every rank in turn, a row each)", cxxopts::value<int>()->default_value("0"))
    ("placement", "out_of_place, in_place or both", cxxopts::value<std::string>()->default_value("both"))
    ("group-size", "split the world into concurrent groups of this many consecutive ranks", cxxopts::value<int>()->default_value("0"));
  options.add_options("Timing and checks")
    ("n,iters", "calls per timed sample (samples repeat until the mean is precise; see Measurement)", cxxopts::value<int>()->default_value("20"))
    ("w,warmup-iters",
     "untimed calls before timing; the first call is never timed (-w 0 makes it too, as "
     "nccl-tests does: it sets up the communicator's connections)",
     cxxopts::value<int>()->default_value("5"))
    ("c,check", "verified calls after timing (0: no check)", cxxopts::value<int>()->default_value("1"))
    ("a,average", "combine rank times: 0 rank 0, 1 mean, 2 min, 3 max", cxxopts::value<int>()->default_value("1"))
    ("per-iter", "time the -n calls back to back, one timestamp between each two, each call's time the slowest rank's (p50, p99, min, max, cv), as nccl-tests reports per-iteration times")
    ("G,cudagraph", "CUDA-graph mode (NCCL): the -n calls captured once as a graph, each sample replaying it this many times", cxxopts::value<int>()->default_value("0"))
    ("t,nthreads", "nccl-tests: threads per process; opbench runs one (1 only)", cxxopts::value<int>()->default_value("1"))
    ("g,ngpus", "nccl-tests: GPUs per thread; opbench runs one GPU per rank (1 only)", cxxopts::value<int>()->default_value("1"))
    ("z,blocking", "nccl-tests: blocking collectives; opbench's calls are non-blocking (0 only)", cxxopts::value<int>()->default_value("0"))
    ("m,agg_iters", "nccl-tests: operations aggregated per call; opbench issues one (1 only)", cxxopts::value<int>()->default_value("1"))
    ("timeout", "seconds a case may go without a call completing (plus one call's time), or a step of the run's start or end without finishing, before the job is aborted (0: never)", cxxopts::value<double>()->default_value("300"))
    ("test-corrupt-rank", "test only: this rank spoils one result element before the check", cxxopts::value<int>())
    ("test-stall-rank", "test only: this rank arrives late at the first case", cxxopts::value<int>())
    ("test-fail-rank", "test only: this rank's first call is refused, as a library error would (all: every rank)", cxxopts::value<std::string>())
    ("test-stall-seconds", "test only: by this many seconds", cxxopts::value<double>()->default_value("3600"))
    ("test-stall-at", "test only: where the stalled rank stops: arrival (at the first case's arrival check), inside (its first call, after arriving), between (after the first case, before the ranks agree to start the next), setup (before the first case's communicator is made), start (at the run's start, before the backend's choice), end (after the last case)", cxxopts::value<std::string>()->default_value("arrival"))
    ("test-lead-rank", "test only: this rank's watchdog speaks first on a timeout (rank 0 then waits the grace as the others do)", cxxopts::value<int>());
  add_measure_options(options, {{"collectives", measure_defaults(MeasureProfile::collective)}},
                      false);
  options.add_options("Backend")
    ("backend", "auto, nccl or mpi", cxxopts::value<std::string>()->default_value("auto"))
    ("device-offset", "GPU of a rank = its local rank + this", cxxopts::value<int>()->default_value("0"))
    ("device", "every rank uses this GPU index (as $NCCL_TESTS_DEVICE): for one visible GPU per rank set up by hand", cxxopts::value<int>());
  options.add_options("Model messages")
    ("model-config-path", "models.json (default configs/models.json)", cxxopts::value<std::string>())
    ("model", "derive the message sizes of this model's training step", cxxopts::value<std::string>())
    ("tp", "tensor-parallel degree", cxxopts::value<std::string>()->default_value("1"))
    ("ep", "expert-parallel degree", cxxopts::value<std::string>()->default_value("1"))
    ("etp", "expert tensor-parallel degree: the ranks that split each expert (default: --tp, as Megatron-Core)", cxxopts::value<std::string>())
    ("moe-dispatcher", "MoE token dispatcher, as Megatron-Core's --moe-token-dispatcher-type: alltoall (the tokens' top-k copies over ep, then etp) or allgather (Megatron-Core's default: every token over the etp x ep ranks)", cxxopts::value<std::string>()->default_value("alltoall"))
    ("cp", "context-parallel degree: each sequence split over cp ranks (tp apart), attention's K and V passed around them in a ring", cxxopts::value<std::string>()->default_value("1"))
    ("pp", "pipeline-parallel degree", cxxopts::value<std::string>()->default_value("1"))
    ("micro-batch", "micro-batch size", cxxopts::value<std::string>()->default_value("1"))
    ("seq-len", "sequence length (default: the model's)", cxxopts::value<std::string>())
    ("model-dtype", "activation dtype of the model messages", cxxopts::value<std::string>()->default_value("bf16"))
    ("list-models", "list the models of the config and exit")
    ("dry-run", "list the cases (with --model: the model's messages, their groups and calls per step) and exit")
    ("world-size", "with --dry-run: plan for this many ranks (default: this launch's)", cxxopts::value<std::string>());
  add_job_shapes_options(options, "Model messages",
                         "every collective the job ran, with its in-job time");
  options.add_options("Report")
    ("report-csv-path", "one CSV with every row (besides the per-op reports)", cxxopts::value<std::string>());
  // clang-format on
  add_report_options(options, "ccl", false);
  return options;
}

// The sizes of a sweep: --sizes, or -b to -e by -f (or -i), with nccl-tests' "step:" text.
void read_sizes(const cxxopts::ParseResult& p, CclOptions& o) {
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  if (p.count("sizes")) {
    for (const auto& s : split(str("sizes"), ','))
      push_once(o.sizes, parse_size(s, "--sizes"), "--sizes", s);
    if (o.sizes.empty()) throw bad_input("--sizes: empty list");
    return;
  }
  double factor = 0;
  try {
    factor = std::stod(str("stepfactor"));
  } catch (const std::exception&) {
    throw bad_input(fmt::format("-f/--stepfactor: '{}' is not a number", str("stepfactor")));
  }
  if (!(factor >= 1))
    throw bad_input(fmt::format("-f/--stepfactor: must be at least 1, got {}", factor));
  const std::uint64_t step = parse_size(str("stepbytes"), "-i/--stepbytes");
  o.sizes = sweep_sizes(parse_size(str("minbytes"), "-b/--minbytes"),
                        parse_size(str("maxbytes"), "-e/--maxbytes"), factor, step);
  o.step_text = factor > 1 ? fmt::format("{:g}(factor)", factor) : fmt::format("{}(bytes)", step);
}

// What a sweep runs besides its sizes: ops, dtypes, reductions, roots, placements, groups.
void read_sweep(const cxxopts::ParseResult& p, CclOptions& o) {
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  o.ops = parse_coll_ops(str("op"));
  read_sizes(p, o);
  const std::string dtype_flag = flag_or_alias(p, "dtype", "datatype");
  o.dtypes = parse_ccl_dtypes(str(dtype_flag.c_str()),
                              dtype_flag == "datatype" ? "-d/--datatype" : "--dtype");
  o.redops = parse_red_ops(str("redop"));
  o.root = p["root"].as<int>();
  if (o.root < -1)
    throw bad_input(fmt::format("-r/--root: must be >= 0, or -1 for every root, got {}", o.root));
  o.placements = parse_placements(str("placement"));
  o.group_size = p["group-size"].as<int>();
  if (o.group_size < 0)
    throw bad_input(fmt::format("--group-size: must be >= 1, got {}", o.group_size));
}

// How each case is timed and checked: -n, -w, -c, -a, --per-iter, -G, --timeout.
void read_timing(const cxxopts::ParseResult& p, CollRunOptions& run) {
  run.iters = p["iters"].as<int>();
  if (run.iters < 1)
    throw bad_input(fmt::format("-n/--iters: must be at least 1, got {}", run.iters));
  run.measure = resolve(MeasureProfile::collective, read_measure_overrides(p, false));
  run.warmup = p["warmup-iters"].as<int>();
  if (run.warmup < 0)
    throw bad_input(fmt::format("-w/--warmup-iters: must be >= 0, got {}", run.warmup));
  run.check_passes = p["check"].as<int>();
  if (run.check_passes < 0)
    throw bad_input(fmt::format("-c/--check: must be >= 0, got {}", run.check_passes));
  int average = p["average"].as<int>();
  if (average < 0 || average > 3)
    throw bad_input(fmt::format("-a/--average: must be 0, 1, 2 or 3, got {}", average));
  run.aggregation = static_cast<RankAggregation>(average);
  run.per_iter = p.count("per-iter") > 0;
  run.graph_replays = p["cudagraph"].as<int>();
  if (run.graph_replays < 0)
    throw bad_input(fmt::format("-G/--cudagraph: must be >= 0, got {}", run.graph_replays));
  if (run.graph_replays > 0 && run.per_iter)
    throw bad_input("-G/--cudagraph times whole graphs; --per-iter times single calls: pick one");
  // nccl-tests' habits: the values opbench runs are accepted, the others explained.
  const int threads = p["nthreads"].as<int>(), gpus = p["ngpus"].as<int>();
  if (threads != 1 || gpus != 1)
    throw bad_input(fmt::format(
        "-t {} -g {}: opbench runs one thread and one GPU per rank; launch one rank per GPU "
        "instead (mpirun -np <ranks x threads x GPUs>)",
        threads, gpus));
  if (p["blocking"].as<int>() != 0)
    throw bad_input("-z/--blocking: opbench issues non-blocking calls only (nccl-tests' -z 0)");
  if (p["agg_iters"].as<int>() != 1)
    throw bad_input("-m/--agg_iters: opbench issues one operation per call (nccl-tests' -m 1)");
  run.timeout_s = p["timeout"].as<double>();
  if (!(run.timeout_s >= 0)) throw bad_input("--timeout: must be >= 0 seconds");
}

// The test-only flags that make a rank spoil a result, stall, fail or speak first.
void read_test_flags(const cxxopts::ParseResult& p, CollRunOptions& run) {
  if (p.count("test-corrupt-rank")) run.corrupt_rank = p["test-corrupt-rank"].as<int>();
  if (run.corrupt_rank >= 0 && run.check_passes == 0)
    throw bad_input("--test-corrupt-rank needs -c 1 or more");
  if (p.count("test-stall-rank")) run.stall_rank = p["test-stall-rank"].as<int>();
  if (p.count("test-lead-rank")) {
    run.lead_rank = p["test-lead-rank"].as<int>();
    if (run.lead_rank < 0)
      throw bad_input(fmt::format("--test-lead-rank {}: must be >= 0", run.lead_rank));
  }
  if (p.count("test-fail-rank")) {
    const std::string v = p["test-fail-rank"].as<std::string>();
    if (v == "all")
      run.fail_rank = -2;
    else if (!v.empty() && v.size() < 7 && v.find_first_not_of("0123456789") == std::string::npos)
      run.fail_rank = std::stoi(v);
    else
      throw bad_input(fmt::format("--test-fail-rank: '{}' is not a rank or all", v));
  }
  run.stall_s = p["test-stall-seconds"].as<double>();
  const auto at = p["test-stall-at"].as<std::string>();
  static const std::map<std::string, StallPoint> kStallPoints{
      {"arrival", StallPoint::arrival},       {"inside", StallPoint::inside},
      {"between", StallPoint::between_cases}, {"setup", StallPoint::set_up},
      {"start", StallPoint::start_up},        {"end", StallPoint::end}};
  const auto point = kStallPoints.find(at);
  if (point == kStallPoints.end())
    throw bad_input(fmt::format(
        "--test-stall-at {}: expected arrival, inside, between, setup, start or end", at));
  run.stall_at = point->second;
}

// --model and its parallel layout; a model's messages bring their own sizes, dtype
// (--model-dtype) and reduction (sum): the sweep's flags would be ignored, so they are refused.
// --op filters the messages.
void read_model(const cxxopts::ParseResult& p, CclOptions& o) {
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  if (p.count("model-config-path")) o.model_config_path = str("model-config-path");
  if (p.count("model")) o.model = str("model");
  if (!o.model_config_path.empty() && o.model.empty())
    throw bad_input("--model-config-path needs --model");
  if (!o.model.empty())
    for (const auto& [flag, shown] : {std::pair{"minbytes", "-b/--minbytes"},
                                      {"maxbytes", "-e/--maxbytes"},
                                      {"stepfactor", "-f/--stepfactor"},
                                      {"stepbytes", "-i/--stepbytes"},
                                      {"sizes", "--sizes"},
                                      {"dtype", "--dtype"},
                                      {"datatype", "-d/--datatype"},
                                      {"redop", "-o/--redop"},
                                      {"root", "-r/--root"}})
      if (p.count(flag))
        throw bad_input(fmt::format(
            "{} does not apply with --model: the model's messages set their sizes, their dtype "
            "(--model-dtype) and their reduction (sum); --op picks among them. Leave {} out, or "
            "--model out for a sweep",
            shown, shown));
  o.tp = parse_positive_int(str("tp"), "--tp");
  o.ep = parse_positive_int(str("ep"), "--ep");
  if (p.count("etp")) o.etp = parse_positive_int(str("etp"), "--etp");
  o.dispatcher = parse_moe_dispatcher(str("moe-dispatcher"));
  o.cp = parse_positive_int(str("cp"), "--cp");
  o.pp = parse_positive_int(str("pp"), "--pp");
  o.micro_batch = parse_positive_int(str("micro-batch"), "--micro-batch");
  if (p.count("seq-len")) o.seqlen = parse_positive_int(str("seq-len"), "--seq-len");
  o.model_dtype = parse_dtype(str("model-dtype"));
}

}  // namespace

std::optional<cxxopts::ParseResult> parse_ccl_command_line(cxxopts::Options& options, int argc,
                                                           char** argv, const char* binary) {
  return parse_command_line(options, argc, argv,
                            [binary] { print_versions(binary, ccl_library_versions()); });
}

void read_ccl_backend_flags(const cxxopts::ParseResult& p, std::string& backend, int& device_offset,
                            std::optional<int>& device) {
  backend = to_lower(p["backend"].as<std::string>());
  if (backend != "auto" && backend != "nccl" && backend != "mpi")
    throw bad_input(
        fmt::format("--backend: unknown backend '{}' (accepted: auto, nccl, mpi)", backend));
  device_offset = p["device-offset"].as<int>();
  if (device_offset < 0) throw bad_input("--device-offset: must be >= 0");
  if (p.count("device")) {
    device = p["device"].as<int>();
    if (*device < 0) throw bad_input("--device: must be >= 0");
  }
}

std::optional<CclOptions> parse_ccl_options(int argc, char** argv) {
  cxxopts::Options options = ccl_flags();
  auto parsed = parse_ccl_command_line(options, argc, argv, "bench_ccl");
  if (!parsed) return std::nullopt;
  const auto& p = *parsed;
  CclOptions o;
  read_ccl_backend_flags(p, o.backend, o.device_offset, o.device);
  read_sweep(p, o);
  read_timing(p, o.run);
  read_test_flags(p, o.run);
  read_model(p, o);
  o.job = read_job_shapes_options(p);
  if (o.wants_capture() && o.wants_model())
    throw bad_input(o.job.flag() + " and --model both say what to run: give one");
  if (p.count("report-csv-path")) o.report_csv_path = p["report-csv-path"].as<std::string>();
  o.report = read_report_options(p);
  o.list_models = p.count("list-models") > 0;
  o.dry_run = p.count("dry-run") > 0;
  if (p.count("world-size")) {
    if (!o.dry_run) throw bad_input("--world-size goes with --dry-run (a run uses mpirun's ranks)");
    o.world_size = parse_positive_int(p["world-size"].as<std::string>(), "--world-size");
  }
  return o;
}

}  // namespace opbench
