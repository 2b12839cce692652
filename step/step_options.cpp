#include "step/step_options.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include <cmath>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "common/error.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"
#include "common/version.hpp"

namespace opbench {
namespace {

// FORWARD[,BACKWARD] in µs, each a finite number >= 0; one number serves both.
std::pair<double, double> parse_host_us(const std::string& text) {
  const auto parts = split(text, ',');
  std::vector<double> v;
  for (const auto& part : parts) {
    char* end = nullptr;
    const double x = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !std::isfinite(x) || x < 0)
      throw bad_input(fmt::format(
          "--host-us-per-kernel: '{}' is not FORWARD[,BACKWARD], microseconds >= 0", text));
    v.push_back(x);
  }
  if (v.empty() || v.size() > 2)
    throw bad_input(fmt::format(
        "--host-us-per-kernel: '{}' is not FORWARD[,BACKWARD], microseconds >= 0", text));
  return {v.front(), v.back()};
}

double parse_overlap(const std::string& text) {
  const std::string t = to_lower(text);
  if (t == "none") return 0;
  if (t == "full") return 1;
  try {
    std::size_t used = 0;
    const double v = std::stod(t, &used);
    if (used == t.size() && v >= 0 && v <= 1) return v;
  } catch (const std::exception&) {
  }
  throw bad_input(fmt::format("--overlap: '{}' is not none, full or a fraction in [0, 1]", text));
}

void add_flags(cxxopts::Options& options) {
  // clang-format off
  options.add_options("Model")
    ("model-config-path", "models.json with the model", cxxopts::value<std::string>())
    ("model", "the model to project (a name of the config)", cxxopts::value<std::string>())
    ("list-models", "list the models of the config and exit")
    ("micro-batch", "sequences per micro-batch (list)", cxxopts::value<std::string>()->default_value("1"))
    ("seq-len", "tokens per sequence (default the model's)", cxxopts::value<std::string>())
    ("global-batch", "sequences per step over every replica (default: --grad-accum micro-batches)", cxxopts::value<std::string>())
    ("grad-accum", "micro-batches per replica per step (default 1)", cxxopts::value<std::string>());
  options.add_options("Parallelism")
    ("tp", "tensor-parallel degree (list)", cxxopts::value<std::string>()->default_value("1"))
    ("pp", "pipeline stages (list)", cxxopts::value<std::string>()->default_value("1"))
    ("vpp", "virtual stages per pipeline rank (interleaved 1F1B)", cxxopts::value<std::string>()->default_value("1"))
    ("dp", "data-parallel replicas (list)", cxxopts::value<std::string>()->default_value("1"))
    ("cp", "context-parallel degree: each sequence split over cp ranks, attention passing K and V around them in a ring (Megatron-Core's --context-parallel-size; fused kernels)", cxxopts::value<std::string>()->default_value("1"))
    ("world-size", "devices in all: dp = world / (tp x cp x pp)", cxxopts::value<std::string>())
    ("ep", "expert-parallel degree (MoE; etp x ep divides tp x cp x dp: with etp = tp and cp 1, ep divides dp)", cxxopts::value<std::string>()->default_value("1"))
    ("etp", "expert tensor-parallel degree (MoE): the ranks that split each routed expert (default: --tp, as Megatron-Core; etp x ep divides tp x cp x dp)", cxxopts::value<std::string>())
    ("no-sequence-parallel", "tp without sequence parallelism (all-reduces instead of all-gathers and reduce-scatters)")
    ("sharding", "ddp, zero1 (Megatron's distributed optimizer: optimizer state sharded over dp, dp x cp with --cp), fsdp or hsdp (bench_fsdp's model)", cxxopts::value<std::string>()->default_value("ddp"))
    ("shard-group", "hsdp: ranks per shard group", cxxopts::value<std::string>())
    ("fsdp-version", "1 or 2", cxxopts::value<int>()->default_value("2"));
  options.add_options("Training")
    ("recompute", "none, selective or full (list)", cxxopts::value<std::string>()->default_value("none"))
    ("kernels", "the kernels that run the model: fused (flash attention, fused norms, loss and optimizer) or eager (PyTorch eager's, one kernel per operation) (list)", cxxopts::value<std::string>()->default_value("fused"))
    ("attention-kernels", "the attention core's kernels when they differ from --kernels: fused with --kernels eager is PyTorch eager calling scaled_dot_product_attention (default: as --kernels)", cxxopts::value<std::string>())
    ("optimizer-impl", "AdamW as fused (one kernel), foreach (PyTorch's multi-tensor kernels) or single (PyTorch's per-tensor loop); default fused with --kernels fused, else PyTorch's choice on the device (single on the CPU, foreach on CUDA)", cxxopts::value<std::string>())
    ("dtype", "compute dtype: bf16, fp16 or fp32 (default fp32 when measuring on the CPU, else bf16)", cxxopts::value<std::string>())
    ("grad-dtype", "dtype of the gradients as reduced", cxxopts::value<std::string>()->default_value("fp32"))
    ("optimizer-dtype", "dtype of AdamW's moments: fp32 (with fp32 master weights below fp32) or --dtype's own (pure bf16 training: no master weights)", cxxopts::value<std::string>()->default_value("fp32"))
    ("overlap", "share of the data-parallel communication hidden under compute: none, full or a fraction", cxxopts::value<std::string>()->default_value("none"))
    ("fused-grad-accum", "the wgrad GEMMs accumulate into the gradients (Megatron's gradient_accumulation_fusion): no gradient accumulation add")
    ("bucket-mb", "ddp: gradient bucket in MiB", cxxopts::value<std::string>()->default_value("25"))
    ("moe-dispatcher", "MoE: Megatron-Core's token dispatcher (its --moe-token-dispatcher-type): alltoall (the tokens' top-k copies over ep, then gathered over etp) or allgather (its default: every token gathered over the etp x ep ranks)", cxxopts::value<std::string>()->default_value("alltoall"))
    ("routing", "MoE: balanced, zipf:S or a histogram file", cxxopts::value<std::string>()->default_value("balanced"))
    ("moe-impl", "MoE experts: grouped (one grouped GEMM), loop (a GEMM per expert) or padded; default grouped with --kernels fused, loop (as PyTorch eager runs them) with eager", cxxopts::value<std::string>())
    ("host-us-per-kernel", "the framework's host cost of one kernel in us, FORWARD[,BACKWARD] (bench/peers/torch_train_step.py prints PyTorch's): added to every kernel on the CPU; on a GPU the step waits where a phase's launches take longer than its kernels (default 0: not modelled)", cxxopts::value<std::string>());
  options.add_options("Memory")
    ("memory-capacity-gib", "memory per device in GiB that a configuration must fit (default: the device's from hardware.json; the machine's on the CPU)", cxxopts::value<std::string>())
    ("fits-only", "keep only the configurations whose peak memory fits (those left out are counted)");
  options.add_options("Times")
    ("measure", "measure the operators the reports lack (the default without --from-reports)")
    ("from-reports", "folders of earlier reports (bench_gemm, bench_attention, bench_memops, bench_ccl, bench_fsdp), comma-separated; a later folder wins", cxxopts::value<std::string>())
    ("backend", "--measure: auto, cuda or cpu", cxxopts::value<std::string>()->default_value("auto"))
    ("device", "--measure: GPU index", cxxopts::value<int>()->default_value("0"))
    ("threads", "--measure on the CPU: threads the memory-bound and attention operators run with, as the job's framework runs them (torch.set_num_threads; default: the CPUs this process may run on)", cxxopts::value<std::string>())
    ("blas-threads", "--measure on the CPU: threads of OpenBLAS's GEMMs, as the job's BLAS runs them (OPENBLAS_NUM_THREADS; default: --threads, else the CPUs this process may run on)", cxxopts::value<std::string>())
    ("check", "--measure: verify every measured result")
    ("dry-run", "list the operators of the busiest stage with their counts and FLOPs and the memory per rank, write the configurations' CSV (without times) when a report path is given, and exit")
    ("report-csv-path", "the configurations' CSV (default step.csv in --report-dir-path)", cxxopts::value<std::string>())
    ("operators-csv-path", "the operator list (default step_operators.csv beside the CSV)", cxxopts::value<std::string>());
  add_job_shapes_options(options, "Times",
                         "its GEMMs', attention's and collectives' in-job average times replace "
                         "the isolated ones, shape by shape",
                         false);
  // clang-format on
}

std::vector<std::int64_t> int_list(const cxxopts::ParseResult& p, const char* flag) {
  return parse_int_list(p[flag].as<std::string>(), std::string("--") + flag);
}

std::int64_t one_int(const cxxopts::ParseResult& p, const char* flag) {
  return parse_positive_int(p[flag].as<std::string>(), std::string("--") + flag);
}

}  // namespace

std::optional<StepOptions> parse_step_options(int argc, char** argv) {
  cxxopts::Options options(
      "bench_step",
      "A training step projected from its operators' times: every GEMM, attention, expert,\n"
      "memory-bound operator and collective of the busiest rank, timed through the other\n"
      "binaries' providers (--measure) or read from their reports (--from-reports), composed\n"
      "with the pipeline bubble and an overlap model into step time, tokens/s, MFU and HFU.\n"
      "  bench_step --model llama3.1-8b --seq-len 1024 --backend cpu\n"
      "  bench_step --model llama3.1-70b --tp 8 --global-batch 64 --from-reports reports/h100");
  add_flags(options);
  add_measure_options(options, {{"CPU", measure_defaults(MeasureProfile::cpu)},
                                {"GPU", measure_defaults(MeasureProfile::gpu)}});
  add_report_options(options, "step", false);
  add_peak_options(options, {.tflops = true, .bandwidth = false});
  auto parsed = parse_command_line(options, argc, argv, [] { print_versions("bench_step", {}); });
  if (!parsed) return std::nullopt;
  const auto& p = *parsed;
  auto str = [&](const char* flag) { return p[flag].as<std::string>(); };
  StepOptions o;
  StepConfig& c = o.base;
  if (p.count("model-config-path")) o.model_config_path = str("model-config-path");
  if (p.count("model")) o.model = str("model");
  o.list_models = p.count("list-models") > 0;
  o.micro_batches = int_list(p, "micro-batch");
  if (p.count("seq-len")) c.seqlen = one_int(p, "seq-len");
  if (p.count("global-batch")) c.global_batch = one_int(p, "global-batch");
  if (p.count("grad-accum")) c.grad_accum = one_int(p, "grad-accum");
  o.tps = int_list(p, "tp");
  o.pps = int_list(p, "pp");
  o.dps = int_list(p, "dp");
  c.vpp = one_int(p, "vpp");
  if (p.count("world-size")) {
    if (given(p, "dp")) throw bad_input("--world-size and --dp: give one of them, not both");
    o.world_size = one_int(p, "world-size");
  }
  c.ep = one_int(p, "ep");
  c.cp = one_int(p, "cp");
  if (p.count("etp")) c.etp = one_int(p, "etp");
  c.dispatcher = parse_moe_dispatcher(str("moe-dispatcher"));
  c.sequence_parallel = p.count("no-sequence-parallel") == 0;
  c.sharding = parse_sharding(str("sharding"));
  if (p.count("shard-group")) c.shard_group = one_int(p, "shard-group");
  c.fsdp_version = p["fsdp-version"].as<int>();
  o.kernels.clear();
  for (const auto& k : split(str("kernels"), ','))
    push_once(o.kernels, parse_kernels(k), "--kernels", k);
  if (p.count("attention-kernels"))
    c.attention_kernels = parse_attention_kernels(str("attention-kernels"));
  if (p.count("optimizer-impl")) o.optimizer_impl = parse_optimizer_impl(str("optimizer-impl"));
  if (p.count("threads")) o.threads = static_cast<unsigned>(one_int(p, "threads"));
  o.blas_threads = o.threads;
  if (p.count("blas-threads")) o.blas_threads = static_cast<unsigned>(one_int(p, "blas-threads"));
  o.recomputes.clear();
  for (const auto& r : split(str("recompute"), ','))
    push_once(o.recomputes, parse_recompute(r), "--recompute", r);
  if (p.count("dtype")) {
    o.dtype = parse_dtype(str("dtype"));
    if (*o.dtype != DType::bf16 && *o.dtype != DType::fp16 && *o.dtype != DType::fp32)
      throw bad_input(
          fmt::format("--dtype: {} is not a training dtype bench_step projects "
                      "(bf16, fp16, fp32)",
                      dtype_name(*o.dtype)));
  }
  c.grad_dtype = parse_dtype(str("grad-dtype"));
  c.optimizer_dtype = parse_dtype(str("optimizer-dtype"));
  c.overlap = parse_overlap(str("overlap"));
  if (p.count("host-us-per-kernel"))
    std::tie(c.host_us_fwd, c.host_us_bwd) = parse_host_us(str("host-us-per-kernel"));
  c.fused_grad_accum = p.count("fused-grad-accum") > 0;
  c.bucket_bytes = one_int(p, "bucket-mb") << 20;
  c.routing = parse_routing(str("routing"));
  if (p.count("moe-impl")) {
    const auto impls = parse_moe_impls(str("moe-impl"));
    if (impls.size() != 1)
      throw bad_input("--moe-impl: give one implementation (grouped, loop or padded)");
    o.moe_impl = impls.front();
  }
  if (p.count("from-reports"))
    for (const auto& dir : split(str("from-reports"), ','))
      if (!dir.empty()) o.from_reports.push_back(dir);
  o.job = read_job_shapes_options(p, false);
  o.measure = o.from_reports.empty() || p.count("measure") > 0;
  o.backend = str("backend");
  o.device = p["device"].as<int>();
  o.check = p.count("check") > 0;
  o.dry_run = p.count("dry-run") > 0;
  if (p.count("report-csv-path")) o.report_csv_path = str("report-csv-path");
  if (p.count("operators-csv-path")) o.operators_csv_path = str("operators-csv-path");
  o.measure_flags = read_measure_overrides(p);
  o.report = read_report_options(p);
  o.peaks = read_peak_options(p, {.tflops = true, .bandwidth = false});
  if (p.count("memory-capacity-gib")) {
    const std::string text = str("memory-capacity-gib");
    try {
      std::size_t used = 0;
      const double v = std::stod(text, &used);
      if (used == text.size() && v > 0 && std::isfinite(v)) o.memory_capacity_gib = v;
    } catch (const std::exception&) {
    }
    if (!o.memory_capacity_gib)
      throw bad_input(
          fmt::format("--memory-capacity-gib: '{}' is not a positive number of GiB", text));
  }
  o.fits_only = p.count("fits-only") > 0;
  if (!o.list_models && o.model.empty())
    throw bad_input("--model: required (bench_step projects one model; --list-models lists them)");
  return o;
}

OptimizerImpl default_optimizer_impl(Kernels kernels, Backend device) {
  if (kernels == Kernels::fused) return OptimizerImpl::fused;
  return device == Backend::cpu ? OptimizerImpl::single : OptimizerImpl::foreach;
}

std::vector<StepConfig> step_configurations(const StepOptions& o, const ModelConfig& model,
                                            DType dtype, Backend device) {
  std::vector<StepConfig> out;
  for (Kernels kernels : o.kernels)
    for (std::int64_t mb : o.micro_batches)
      for (std::int64_t tp : o.tps)
        for (std::int64_t pp : o.pps)
          for (std::int64_t dp : o.dps)
            for (Recompute r : o.recomputes) {
              StepConfig c = o.base;
              c.model = model;
              c.micro_batch = mb;
              c.tp = tp;
              c.pp = pp;
              c.dp = dp;
              if (o.world_size > 0) {
                const std::int64_t model_parallel = tp * c.cp * pp;
                if (o.world_size % model_parallel != 0)
                  throw bad_input(fmt::format(
                      "--world-size {}: not a multiple of --tp {}{} x --pp {}", o.world_size, tp,
                      c.cp > 1 ? fmt::format(" x --cp {}", c.cp) : "", pp));
                c.dp = o.world_size / model_parallel;
              }
              c.recompute = r;
              c.dtype = dtype;
              c.kernels = kernels;
              c.optimizer_impl = o.optimizer_impl.value_or(default_optimizer_impl(kernels, device));
              c.moe_impl =
                  o.moe_impl.value_or(kernels == Kernels::eager ? MoeImpl::loop : MoeImpl::grouped);
              c.host_serial = device == Backend::cpu;
              validate(c);
              out.push_back(c);
            }
  return out;
}

}  // namespace opbench
