#include "memops/memop_options.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "common/error.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include "common/cuda/device.hpp"
#endif

namespace opbench {

std::optional<MemopOptions> parse_memop_options(int argc, char** argv) {
  MemopOptions o;
  cxxopts::Options options(
      "bench_memops",
      "Memory-bound operators of a training step (norms, activations, rotary, cross-entropy,\n"
      "embedding, AdamW, casts, copies): our CUDA kernels and cuDNN's norms on the GPU,\n"
      "vectorised loops over every core on the CPU; GB/s against the device's peak.\n"
      "  bench_memops --model llama3.1-8b --tp 8 --check\n"
      "  bench_memops --op add,rmsnorm,softmax --size 1M:256M:x4 --cols 4096\n"
      "  bench_memops --shapes-json-path configs/memop_shapes.json");
  // clang-format off
  options.add_options("Inputs")
    ("model-config-path", "models.json with the models to derive operators from", cxxopts::value<std::string>())
    ("model", "models to run, comma-separated (default: every model in the file)", cxxopts::value<std::string>())
    ("list-models", "list the models of the config and exit")
    ("shapes-json-path", "explicit cases: [{op, rows, cols, pass, dtype, heads, kv_heads, head_dim, vocab}]", cxxopts::value<std::string>())
    ("op", "operators, comma-separated (default: all): " + memop_names(), cxxopts::value<std::string>())
    ("pass", "fwd, bwd or both (operators without a backward run fwd)", cxxopts::value<std::string>()->default_value("fwd,bwd"))
    ("size", "sweep: element counts, a list and/or ranges (64M, 1K:1G:x2)", cxxopts::value<std::string>())
    ("cols", "sweep: row length of row operators and of every shape (rows = size / cols)", cxxopts::value<std::string>()->default_value("4096"))
    ("vocab", "sweep: rows of the embedding table", cxxopts::value<std::string>()->default_value("32768"))
    ("tp", "--model: tensor-parallel degree (with sequence parallelism)", cxxopts::value<std::string>()->default_value("1"))
    ("cp", "--model: context-parallel degree: the operators of one rank's seq/cp tokens (bench_step --cp's)", cxxopts::value<std::string>()->default_value("1"))
    ("dp", "--model: data-parallel shards of the optimizer state (AdamW steps numel / tp / dp)", cxxopts::value<std::string>()->default_value("1"))
    ("micro-batch", "--model: micro-batch sizes (list)", cxxopts::value<std::string>()->default_value("1"))
    ("seq-len", "--model: sequence lengths (list; default the model's)", cxxopts::value<std::string>());
  options.add_options("Run")
    ("backend", "auto, cuda or cpu", cxxopts::value<std::string>()->default_value("auto"))
    ("provider", "GPU: cuda (our kernels), cudnn (norms), both by default; CPU: cpu", cxxopts::value<std::string>())
    ("device", "GPU index", cxxopts::value<int>()->default_value("0"))
    ("dtype", "dtypes of the operators that take one: fp32, bf16, fp16 (default bf16 on GPU, fp32 on CPU)", cxxopts::value<std::string>())
    ("check", "compare every result with the plain reference; too far off fails the row")
    ("cold", "flush the cache before each sample instead of rotating buffers")
    ("dry-run", "list the cases with their bytes and exit")
    ("test-corrupt-result", "test only: spoil one element of every result before --check, to prove the check fails");
  // clang-format on
  add_measure_options(options, {{"CPU", measure_defaults(MeasureProfile::cpu)},
                                {"GPU", measure_defaults(MeasureProfile::gpu)}});
  add_report_options(options, "memops");
  add_peak_options(options, {.tflops = false, .bandwidth = true});
  auto parsed = parse_command_line(options, argc, argv, [] {
    std::vector<LibraryVersion> libraries;
#ifdef OPBENCH_HAVE_CUDA
    libraries.push_back(cuda_runtime_library_version());
#endif
    print_versions("bench_memops", libraries);
  });
  if (!parsed) return std::nullopt;
  const auto& p = *parsed;
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  o.backend = str("backend");
  o.device = p["device"].as<int>();
  if (p.count("provider")) o.providers = str("provider");
  if (p.count("model-config-path")) o.model_config_path = str("model-config-path");
  if (p.count("model")) o.models = str("model");
  if (p.count("shapes-json-path")) o.shapes_path = str("shapes-json-path");
  o.list_models = p.count("list-models") > 0;
  if (p.count("op"))
    for (const auto& name : split(str("op"), ',')) {
      push_once(o.ops, parse_memop(name, "--op"), "--op", name);
    }
  o.passes.clear();
  for (const auto& name : split(str("pass"), ',')) {
    const std::string lower = to_lower(name);
    if (lower == "fwd")
      push_once(o.passes, MemPass::fwd, "--pass", name);
    else if (lower == "bwd")
      push_once(o.passes, MemPass::bwd, "--pass", name);
    else
      throw bad_input(fmt::format("--pass: unknown pass '{}' (accepted: fwd, bwd)", name));
  }
  if (o.passes.empty()) throw bad_input("--pass: empty list");
  if (p.count("size")) o.sizes = parse_int_list(str("size"), "--size");
  o.cols = parse_positive_int(str("cols"), "--cols");
  o.vocab = parse_positive_int(str("vocab"), "--vocab");
  o.model_run.tp = parse_positive_int(str("tp"), "--tp");
  o.cp = parse_positive_int(str("cp"), "--cp");
  o.model_run.dp = parse_positive_int(str("dp"), "--dp");
  o.model_run.micro_batches = parse_int_list(str("micro-batch"), "--micro-batch");
  if (p.count("seq-len")) o.model_run.seqlens = parse_int_list(str("seq-len"), "--seq-len");
  if (p.count("dtype")) {
    o.dtypes = parse_dtype_list(str("dtype"), "--dtype");
    for (DType t : *o.dtypes)
      if (t != DType::fp32 && t != DType::bf16 && t != DType::fp16)
        throw bad_input(
            fmt::format("--dtype: {} is not a memops dtype (fp32, bf16, fp16)", dtype_name(t)));
  }
  o.check = p.count("check") > 0;
  o.cold = p.count("cold") > 0;
  o.dry_run = p.count("dry-run") > 0;
  o.corrupt_for_test = p.count("test-corrupt-result") > 0;
  if (o.corrupt_for_test && !o.check)
    throw bad_input("--test-corrupt-result only makes sense with --check");
  o.measure = read_measure_overrides(p);
  o.report = read_report_options(p);
  o.peaks = read_peak_options(p, {.tflops = false, .bandwidth = true});
  return o;
}

}  // namespace opbench
