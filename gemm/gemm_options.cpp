#include "gemm/gemm_options.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "common/error.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "gemm/provider.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include "common/cuda/device.hpp"
#endif

namespace opbench {

std::optional<GemmOptions> parse_gemm_options(int argc, char** argv) {
  GemmOptions o;
  cxxopts::Options options(
      "bench_gemm",
      "GEMM benchmark: cuBLASLt on the GPU, OpenBLAS on the CPU.\n"
      "Shapes come from model configs (--model-config-path / --model), an explicit\n"
      "shapes file (--shapes-json-path), or sweeps (--m/--n/--k).\n"
      "m, n, k, transa, transb describe C[m,n] = op(A)·op(B) with row-major storage.");
  // clang-format off
  options.add_options("Inputs")
    ("model-config-path", "models.json with the models to derive GEMMs from", cxxopts::value<std::string>())
    ("model", "models to run, comma-separated (default: every model in the file)", cxxopts::value<std::string>())
    ("list-models", "list the models of the config and exit")
    ("shapes-json-path", "explicit GEMMs: [{name, m, n, k, batch, transa, transb, dtype}]", cxxopts::value<std::string>())
    ("m", "sweep: m values, a list and/or start:stop:step ranges", cxxopts::value<std::string>())
    ("n", "sweep: n values", cxxopts::value<std::string>())
    ("k", "sweep: k values", cxxopts::value<std::string>())
    ("batch", "sweep: batch count", cxxopts::value<std::string>()->default_value("1"))
    ("layout", "sweep: transposes of A and B (NN, NT, TN, TT)", cxxopts::value<std::string>()->default_value("NN"))
    ("tp", "tensor-parallel degree the model GEMMs are split for", cxxopts::value<std::string>()->default_value("1"))
    ("cp", "context-parallel degree: the model GEMMs of one rank's seq/cp tokens (bench_step --cp's)", cxxopts::value<std::string>()->default_value("1"))
    ("micro-batch", "micro-batch sizes (list)", cxxopts::value<std::string>()->default_value("1"))
    ("seq-len", "sequence lengths (list or start:stop:step; default: the model's seqlen)", cxxopts::value<std::string>())
    ("gemm", "only these layers of the models (comma list, e.g. moe_expert_gate_up,moe_expert_down; default: all)", cxxopts::value<std::string>())
    ("pass", "passes of each linear layer: fprop,dgrad,wgrad", cxxopts::value<std::string>()->default_value("fprop,dgrad,wgrad"))
    ("ep", "MoE: expert-parallel degree (must divide the routed experts); rows time the most loaded rank", cxxopts::value<std::string>()->default_value("1"))
    ("etp", "MoE: expert tensor-parallel degree, the ranks that split each routed expert (default: --tp, as Megatron-Core)", cxxopts::value<std::string>())
    ("routing", "MoE: how tokens spread over experts: balanced, zipf:S (expert i weighs i^-S), or a JSON file of per-expert counts", cxxopts::value<std::string>()->default_value("balanced"))
    ("moe-impl", "MoE: how the experts run: grouped (one grouped call), loop (a GEMM per expert), padded (one batched GEMM padded to the largest expert)", cxxopts::value<std::string>()->default_value("grouped,loop,padded"));
  options.add_options(kAliasGroup)
    ("passes", "old spelling of --pass", cxxopts::value<std::string>());
  options.add_options("Run")
    ("backend", "auto, cuda or cpu", cxxopts::value<std::string>()->default_value("auto"))
    ("device", "GPU index", cxxopts::value<int>()->default_value("0"))
    ("dtype", "dtypes, comma-separated: bf16, fp16, fp32, tf32, fp8_e4m3, fp64 (default bf16 on GPU, fp32 on CPU)", cxxopts::value<std::string>())
    ("check", "verify every result (Freivalds' test); a wrong result fails the row and the run")
    ("cold", "flush the cache before each sample instead of rotating input buffers")
    ("algo-candidates", "cuBLASLt heuristic candidates timed to pick the fastest", cxxopts::value<int>()->default_value("8"))
    ("fp8-accum", "fp8 accumulation: auto (fast for fprop, split for dgrad and wgrad, as Transformer Engine), fast or split", cxxopts::value<std::string>()->default_value("auto"))
    ("dry-run", "list the cases with their FLOPs and exit (with --backend cuda and no GPU here: as cuBLASLt would run them on Hopper)")
    ("device-profile", "with --dry-run: plan for this GPU (a100, h100, h200, b200 or a profile file): its compute capability sets the fp8 layouts", cxxopts::value<std::string>())
    ("test-corrupt-result", "test only: spoil one element of every result before --check, to prove the check fails");
  // clang-format on
  add_job_shapes_options(options, "Inputs", "every GEMM shape the job ran, with its in-job time");
  add_measure_options(options, {{"CPU", measure_defaults(MeasureProfile::cpu)},
                                {"GPU", measure_defaults(MeasureProfile::gpu)}});
  add_report_options(options, "gemm");
  add_peak_options(options);

  auto parsed = parse_command_line(options, argc, argv, [] {
    std::vector<LibraryVersion> libraries{openblas_library_version()};
#ifdef OPBENCH_HAVE_CUDA
    libraries.push_back(cuda_runtime_library_version());
    libraries.push_back(cublaslt_library_version());
#endif
    print_versions("bench_gemm", libraries);
  });
  if (!parsed) return std::nullopt;
  const auto& p = *parsed;
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };

  o.backend = str("backend");
  o.device = p["device"].as<int>();
  if (p.count("model-config-path")) o.model_config_path = str("model-config-path");
  if (p.count("model")) o.models = str("model");
  if (p.count("shapes-json-path")) o.shapes_path = str("shapes-json-path");
  o.job = read_job_shapes_options(p);
  int sweep_flags = static_cast<int>(p.count("m") + p.count("n") + p.count("k"));
  if (sweep_flags > 0 && sweep_flags < 3) throw bad_input("a sweep needs all of --m, --n and --k");
  if (sweep_flags == 3) {
    o.ms = parse_int_list(str("m"), "--m");
    o.ns = parse_int_list(str("n"), "--n");
    o.ks = parse_int_list(str("k"), "--k");
  }
  o.sweep_batch = parse_positive_int(str("batch"), "--batch");
  o.layout = str("layout");
  o.tp = parse_positive_int(str("tp"), "--tp");
  o.cp = parse_positive_int(str("cp"), "--cp");
  o.micro_batches = parse_int_list(str("micro-batch"), "--micro-batch");
  if (p.count("seq-len")) o.seqlens = parse_int_list(str("seq-len"), "--seq-len");
  if (p.count("pass") && p.count("passes"))
    throw bad_input("--pass and --passes are the same flag: give one");
  o.passes = parse_passes(p.count("passes") ? str("passes") : str("pass"));
  if (p.count("gemm")) o.layers = split(str("gemm"), ',');
  o.moe.ep = parse_positive_int(str("ep"), "--ep");
  if (p.count("etp")) o.moe.etp = parse_positive_int(str("etp"), "--etp");
  o.moe.routing = parse_routing(str("routing"));
  o.moe.impls = parse_moe_impls(str("moe-impl"));
  if (p.count("dtype")) o.dtypes = parse_dtype_list(str("dtype"));
  o.check = p.count("check") > 0;
  o.cold = p.count("cold") > 0;
  o.dry_run = p.count("dry-run") > 0;
  if (p.count("device-profile")) {
    o.device_profile = str("device-profile");
    if (!o.dry_run)
      throw bad_input("--device-profile describes a GPU that is not here: it goes with --dry-run");
  }
  o.list_models = p.count("list-models") > 0;
  o.corrupt_for_test = p.count("test-corrupt-result") > 0;
  if (o.corrupt_for_test && !o.check)
    throw bad_input("--test-corrupt-result only makes sense with --check");
  o.algo_candidates = p["algo-candidates"].as<int>();
  if (o.algo_candidates < 1 || o.algo_candidates > 1024)
    throw bad_input(
        fmt::format("--algo-candidates: must be in 1..1024, got {}", o.algo_candidates));
  o.fp8_accum = parse_fp8_accumulation(str("fp8-accum"));
  o.measure = read_measure_overrides(p);
  o.report = read_report_options(p);
  o.peaks = read_peak_options(p);
  return o;
}

}  // namespace opbench
