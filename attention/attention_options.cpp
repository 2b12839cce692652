#include "attention/attention_options.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "common/error.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include "common/cuda/device.hpp"
#include "cudnn/cudnn_backend.hpp"
#endif

namespace opbench {

std::optional<AttentionOptions> parse_attention_options(int argc, char** argv) {
  AttentionOptions o;
  cxxopts::Options options(
      "bench_attention",
      "Fused attention benchmark: cuDNN SDPA on the GPU, blocked flash-style fp32 on the CPU.\n"
      "  bench_attention --shapes-json-path configs/attention_shapes.json --report-csv-path "
      "att.csv\n"
      "  bench_attention --model llama3.1-8b --seq-len 1024,2048 --pass fwd,bwd --check");
  // clang-format off
  options.add_options("Inputs")
    ("shapes-json-path", "[{model, batch_size, seqlen_q, seqlen_kv, num_head_q, num_head_kv, head_dim_qk, head_dim_v, causal, dtype}]", cxxopts::value<std::string>())
    ("model-config-path", "models.json to derive shapes from (default configs/models.json with --model)", cxxopts::value<std::string>())
    ("model", "models, comma-separated", cxxopts::value<std::string>())
    ("seq-len", "sequence lengths for --model (list or start:stop:step; default the model's)", cxxopts::value<std::string>())
    ("micro-batch", "batch sizes for --model (list)", cxxopts::value<std::string>()->default_value("1"))
    ("tp", "tensor-parallel degree: --model shapes get the heads of one rank (query and KV heads / tp)", cxxopts::value<std::string>()->default_value("1"))
    ("cp", "context-parallel degree: --model shapes become one rank's calls of a layer, causal over its seq/cp tokens and unmasked against a ring step's block of seq/(2 cp) keys (bench_step --cp's)", cxxopts::value<std::string>()->default_value("1"))
    ("list-models", "list the models of the config and exit")
    ("pass", "fwd, bwd or both (bwd timed on its own)", cxxopts::value<std::string>()->default_value("fwd,bwd"))
    ("dtype", "override every shape's dtype, a list: bf16, fp16 (GPU), fp32 (CPU)", cxxopts::value<std::string>())
    ("causal", "override every shape's mask: true or false", cxxopts::value<std::string>());
  options.add_options("Run")
    ("backend", "auto, cuda or cpu", cxxopts::value<std::string>()->default_value("auto"))
    ("provider", "cudnn on the GPU; blocked (flash-style, the CPU default) or reference (naive fp64) on the CPU", cxxopts::value<std::string>()->default_value(""))
    ("device", "GPU index", cxxopts::value<int>()->default_value("0"))
    ("check", "compare every result with the reference (on up to --check-heads heads); too far off fails the row")
    ("check-heads", "(batch, head) pairs the check covers", cxxopts::value<std::string>()->default_value("4"))
    ("report-csv-path", "the CSV (default attention.csv in --report-dir-path)", cxxopts::value<std::string>())
    ("dry-run", "list the cases with their FLOPs and exit; on a GPU, or with --device-profile, also the cuDNN engines that accept each graph")
    ("engines-per-graph", "with --dry-run: finalize the heuristics' configurations in order until this many accept a graph (each compiles a kernel)", cxxopts::value<int>()->default_value("16"))
    ("device-profile", "with --dry-run: ask cuDNN about a GPU that is not here: a100, h100, h200, b200 (configs/cudnn_devices.json) or a profile file", cxxopts::value<std::string>());
  // clang-format on
  add_job_shapes_options(options, "Inputs",
                         "every attention call the job ran (a trace's SDPA operators), with its "
                         "in-job time");
  add_measure_options(options, {{"CPU", resolve(MeasureProfile::cpu, attention_cpu_measure({}))},
                                {"GPU", measure_defaults(MeasureProfile::gpu)}});
  add_report_options(options, "attention");
  add_peak_options(options, {.tflops = true, .bandwidth = false});
  auto parsed = parse_command_line(options, argc, argv, [] {
    std::vector<LibraryVersion> libraries{openblas_library_version()};
#ifdef OPBENCH_HAVE_CUDA
    libraries.push_back(cuda_runtime_library_version());
    libraries.push_back(cudnn_library_version());
#endif
    print_versions("bench_attention", libraries);
  });
  if (!parsed) return std::nullopt;
  const auto& p = *parsed;
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  if (p.count("shapes-json-path")) o.shapes_path = str("shapes-json-path");
  if (p.count("model-config-path")) o.model_config_path = str("model-config-path");
  if (p.count("model")) o.models = str("model");
  o.job = read_job_shapes_options(p);
  if (p.count("seq-len")) o.seqlens = parse_int_list(str("seq-len"), "--seq-len");
  o.micro_batches = parse_int_list(str("micro-batch"), "--micro-batch");
  o.tp = parse_positive_int(str("tp"), "--tp");
  o.cp = parse_positive_int(str("cp"), "--cp");
  o.list_models = p.count("list-models") > 0;
  o.passes = parse_attention_passes(str("pass"));
  if (p.count("dtype")) o.dtypes = parse_dtype_list(str("dtype"), "--dtype");
  for (DType t : o.dtypes)
    if (!is_attention_dtype(t))
      throw bad_input(
          fmt::format("--dtype: {} is not an attention dtype (fp32, bf16, fp16)", dtype_name(t)));
  if (p.count("causal")) {
    auto c = to_lower(str("causal"));
    if (c != "true" && c != "false")
      throw bad_input(fmt::format("--causal: '{}' is not true or false", c));
    o.causal = c == "true";
  }
  o.backend = str("backend");
  o.provider = to_lower(str("provider"));
  o.device = p["device"].as<int>();
  o.check = p.count("check") > 0;
  o.check_heads = parse_positive_int(str("check-heads"), "--check-heads");
  if (p.count("report-csv-path")) o.report_csv_path = str("report-csv-path");
  o.dry_run = p.count("dry-run") > 0;
  o.engines_per_graph = p["engines-per-graph"].as<int>();
  if (o.engines_per_graph < 1 || o.engines_per_graph > 16)
    throw bad_input(
        fmt::format("--engines-per-graph: must be in 1..16, got {}", o.engines_per_graph));
  if (p.count("device-profile")) {
    o.device_profile = str("device-profile");
    if (!o.dry_run)
      throw bad_input("--device-profile describes a GPU that is not here: it goes with --dry-run");
  }
  o.measure = read_measure_overrides(p);
  o.report = read_report_options(p);
  o.peaks = read_peak_options(p, {.tflops = true, .bandwidth = false});
  if (o.shapes_path.empty() && o.models.empty() && o.model_config_path.empty() && !o.list_models &&
      !o.job.wanted())
    throw bad_input(
        "nothing to run: give --shapes-json-path, --model (with --model-config-path), "
        "--capture-path or --trace-path");
  return o;
}

MeasureOverrides attention_cpu_measure(MeasureOverrides user) {
  if (!user.min_samples && !user.max_samples) user.min_samples = 3;
  return user;
}

MeasureOptions attention_measure(Backend backend, const MeasureOverrides& user) {
  return resolve(backend_traits(backend).profile,
                 backend == Backend::cpu ? attention_cpu_measure(user) : user);
}

}  // namespace opbench
