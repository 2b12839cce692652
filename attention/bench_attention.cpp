#include "attention/bench_attention.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "attention/attention_options.hpp"
#include "attention/attention_provider.hpp"
#include "attention/attention_run.hpp"
#include "attention/capture_attention.hpp"
#include "common/backend.hpp"
#include "common/case_loop.hpp"
#include "common/device_profile.hpp"
#include "common/error.hpp"
#include "common/hardware.hpp"
#include "common/harness_cost.hpp"
#include "common/interrupt.hpp"
#include "common/json_reader.hpp"
#include "common/model_config.hpp"
#include "common/model_list.hpp"
#include "common/owned_files.hpp"
#include "common/progress.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
#include "common/resume.hpp"
#include "common/run_tally.hpp"
#include "common/summary.hpp"
#include "common/text.hpp"
#include "common/timer.hpp"
#include "trace/trace_source.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include "attention/cudnn_dry_run.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/version.hpp"
#endif

namespace opbench {
namespace {

std::vector<AttentionCase> build_cases(const AttentionOptions& o, Backend backend) {
  std::vector<AttentionShape> shapes;
  if (!o.shapes_path.empty()) shapes = load_attention_shapes(o.shapes_path);
  if (!o.models.empty() || !o.model_config_path.empty()) {
    std::string path =
        o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
    for (const auto& m : select_models(load_models(path), o.models, path)) {
      auto seqlens = o.seqlens.empty() ? std::vector<std::int64_t>{m.seqlen} : o.seqlens;
      if (o.cp > 1) context_parallel_seqlens(m, seqlens, o.cp);  // refuses a sequence it cannot cut
      for (const AttentionShape& whole :
           model_attention_shapes(m, seqlens, o.micro_batches, DType::bf16, o.tp)) {
        if (o.cp == 1) {
          shapes.push_back(whole);
          continue;
        }
        const CpAttention split = context_parallel_attention(whole, o.cp);
        shapes.push_back(split.own);
        shapes.push_back(split.ring);
      }
    }
  }
  // --dtype gives the dtypes to run; else the shape's own, in fp32 on a backend whose providers
  // compute in fp32 (the CPU's), with a note
  auto dtypes_of = [&](const AttentionShape& shape, std::string& note) {
    std::vector<DType> dtypes = o.dtypes;
    if (dtypes.empty()) {
      dtypes.push_back(shape.dtype);
      const BackendTraits& traits = backend_traits(backend);
      if (traits.default_dtype == DType::fp32 && shape.dtype != DType::fp32) {
        note = fmt::format("run in fp32 on the {} (the shape says {})", traits.device_kind,
                           dtype_name(shape.dtype));
        dtypes.back() = DType::fp32;
      }
    }
    return dtypes;
  };
  std::vector<AttentionCase> cases;
  for (const auto& shape : shapes) {
    std::string note;
    for (DType t : dtypes_of(shape, note)) {
      AttentionShape s = shape;
      s.dtype = t;
      if (o.causal) s.causal = *o.causal;
      validate(s, s.model);
      for (AttentionPass p : o.passes)
        cases.push_back({s, p, note, std::nullopt});
    }
  }
  if (o.job.wanted()) {
    // a job's calls keep their pass and mask; --dtype and the CPU's fp32 apply as above
    std::vector<std::string> left_out;
    const ShapeSource source = trace::job_shape_source(o.job);
    print_source_notes(source);
    for (AttentionCase c : capture_attention_cases(source, o.job.rank, &left_out)) {
      const DType job_dtype = c.shape.dtype;
      for (DType t : dtypes_of(c.shape, c.note)) {
        AttentionCase run = c;
        run.shape.dtype = t;
        if (t != job_dtype) {
          run.captured->as_job_ran = false;
          append_note(run.note, fmt::format("no in_job_ratio: the job ran this call in {}",
                                            dtype_name(job_dtype)));
        }
        cases.push_back(std::move(run));
      }
    }
    for (const auto& why : left_out)
      fmt::print(stderr, "warning: {}: left out {}\n", o.job.flag(), why);
    if (cases.empty() && left_out.empty())
      throw bad_input(fmt::format(
          "{} {}: no attention call in the job's tables (the capture library records none; a "
          "trace's SDPA operators are attention): nothing for bench_attention to run",
          o.job.flag(), o.job.path()));
    if (cases.empty())
      throw bad_input(fmt::format(
          "{} {}: every attention call in the job's tables was left out (the warnings above say "
          "why): nothing for bench_attention to run",
          o.job.flag(), o.job.path()));
  }
  return cases;
}

void list_cases(const std::vector<AttentionCase>& cases) {
  ConsoleTable table(
      {{"model", "", 18}, {"dims", "", 36}, {"dtype", "", 5}, {"pass", "", 4}, {"gflop", "", 10}});
  for (const auto& c : cases) {
    Record r;
    r.arg("model", c.shape.model)
        .arg("dims", c.shape.dims())
        .arg("dtype", std::string(dtype_name(c.shape.dtype)));
    r.arg("pass", attention_pass_name(c.pass))
        .metric("gflop", static_cast<double>(c.shape.flops(c.pass)) / 1e9);
    table.print(r);
  }
  std::printf("%s\n", counted(cases.size(), "case").c_str());
}

#ifdef OPBENCH_HAVE_CUDA
// --dry-run where cuDNN can be asked: on the GPU here, or on a described one (--device-profile,
// no GPU needed). Each case and pass: the engines that accept the graph, or cuDNN's reason.
int engine_dry_run(const AttentionOptions& o, const std::vector<AttentionCase>& cases,
                   const DeviceProfile* profile, int argc, char** argv) {
  std::string device_name, how;
  Descriptor description;
  cudnnHandle_t handle = nullptr;
  CudnnTarget target;
  if (profile) {
    how = "cuDNN on a device description, libcuda: " + load_cuda_driver_or_stub();
    description = make_device_description(profile->device.dump());
    target.device = description.get();
    device_name = profile->name;
    how = profile->description + "; " + how;
  } else {
    OPBENCH_CUDA_CHECK(cudaSetDevice(o.device));
    cudnn_check(cudnnCreate(&handle), "cudnnCreate");
    target.handle = handle;
    device_name = cuda_device_info(o.device).name;
    how = "cuDNN on the GPU here";
  }
  // The engine report honours the report flags as a measured run does: --report-csv-path names
  // its CSV (default attention_engines.csv in --report-dir-path), --format its files.
  const std::string dir =
      resolve_report_dir(o.report.report_dir, o.report_csv_path, "attention-engines");
  const std::string base = report_base(
      o.report_csv_path.empty() ? (std::filesystem::path(dir) / "attention_engines.csv").string()
                                : o.report_csv_path);
  prepare_report_folder(dir, "bench_attention", false,
                        report_outputs("--report-csv-path", base, o.report.formats));
  Environment env(argc, argv, "bench_attention");
  env.add_library("cuDNN", version_from_int(static_cast<long long>(cudnnGetVersion())));
  env.write(dir, false);
  ReportFiles files(base, o.report.formats, nlohmann::json{{"run_id", env.run_id()}},
                    "opbench_attention_engines");
  std::fprintf(stderr, "dry run: %s (cuDNN %s)\n", how.c_str(),
               version_from_int(static_cast<long long>(cudnnGetVersion())).c_str());
  ConsoleTable table({{"model", "", 16},
                      {"dims", "", 34},
                      {"dtype", "", 5},
                      {"pass", "", 4},
                      {"accepted", "engines", 7},
                      {"status", "", 7},
                      {"first_engine", "first accepting engine, or why none", 60}});
  std::size_t accepted = 0;
  // Models often share an attention shape (Llama 3 and 3.1 70B, for one): a graph cuDNN has
  // already judged is reported again without finalizing its plans twice, each of which compiles
  // a kernel (about a second apiece on a CPU).
  std::map<std::string, EngineReport> judged;
  for (const auto& c : cases) {
    const std::string graph_key = fmt::format("{} {} {}", c.shape.dims(), dtype_name(c.shape.dtype),
                                              attention_pass_name(c.pass));
    auto seen = judged.find(graph_key);
    if (seen == judged.end())
      seen =
          judged
              .emplace(graph_key, cudnn_engine_report(c.shape, c.pass, target, o.engines_per_graph))
              .first;
    const EngineReport& e = seen->second;
    Record row;
    row.arg("model", c.shape.model).arg("batch_size", c.shape.batch);
    row.arg("seqlen_q", c.shape.seqlen_q).arg("seqlen_kv", c.shape.seqlen_kv);
    row.arg("num_head_q", c.shape.heads_q).arg("num_head_kv", c.shape.heads_kv);
    row.arg("head_dim_qk", c.shape.head_dim_qk).arg("head_dim_v", c.shape.head_dim_v);
    row.arg("causal", std::string(c.shape.causal ? "true" : "false"));
    row.arg("dtype", std::string(dtype_name(c.shape.dtype)))
        .arg("pass", attention_pass_name(c.pass));
    row.arg("device", device_name).arg("dims", c.shape.dims());
    row.metric("flops", c.shape.flops(c.pass));
    row.metric("configurations", static_cast<std::int64_t>(e.configurations))
        .metric("offered", static_cast<std::int64_t>(e.offered))
        .metric("accepted", static_cast<std::int64_t>(e.accepted));
    row.result("engines", e.engines.empty() ? Value{} : Value{e.engines});
    row.result("first_engine", e.accepted ? e.engines.substr(0, e.engines.find(';')) : e.note);
    row.result("status", std::string(status_name(e.status)));
    row.result("note", e.note.empty() ? Value{} : Value{e.note});
    files.write(row);
    table.print(row);
    accepted += e.status == Status::ok;
  }
  if (handle) cudnnDestroy(handle);
  env.write(dir, true);
  std::fprintf(stderr,
               "%zu graphs on %s (%zu distinct): %zu accepted by at least one engine, %zu not. "
               "Reports:\n",
               cases.size(), device_name.c_str(), judged.size(), accepted, cases.size() - accepted);
  for (const auto& path : files.paths())
    std::fprintf(stderr, "  %s (%s)\n", path.c_str(), counted(files.rows(), "row").c_str());
  return 0;
}
#endif

}  // namespace

int bench_attention_main(int argc, char** argv) {
  HarnessCost harness;
  auto parsed = parse_attention_options(argc, argv);
  if (!parsed) return 0;
  const AttentionOptions& o = *parsed;
  if (o.list_models) return print_model_list(o.model_config_path);
  if (!o.device_profile.empty()) {
    const DeviceProfile profile = load_device_profile(o.device_profile);  // bad input first
#ifdef OPBENCH_HAVE_CUDA
    return engine_dry_run(o, build_cases(o, Backend::cuda), &profile, argc, argv);
#else
    throw bad_input(
        fmt::format("--device-profile {}: asking cuDNN needs a build with the CUDA "
                    "toolkit, and this one has none",
                    profile.name));
#endif
  }
  BackendChoice choice = choose_backend(o.backend, o.device);
  auto cases = build_cases(o, choice.backend);
  if (o.dry_run) {
#ifdef OPBENCH_HAVE_CUDA
    if (choice.backend == Backend::cuda) return engine_dry_run(o, cases, nullptr, argc, argv);
#endif
    list_cases(cases);
    std::printf(
        "(--device-profile a100|h100|h200|b200 asks cuDNN which engines accept each graph "
        "on that GPU, without one)\n");
    return 0;
  }
  auto provider = make_attention_provider(choice.backend, o.provider, o.device);
  const std::string dir = resolve_report_dir(o.report.report_dir, o.report_csv_path, "attention");
  const std::string csv_path = o.report_csv_path.empty()
                                   ? (std::filesystem::path(dir) / "attention.csv").string()
                                   : o.report_csv_path;
  std::vector<NamedOutput> named =
      report_outputs("--report-csv-path", report_base(csv_path), o.report.formats);
  named.push_back({"--summary-path", o.report.summary_path});
  prepare_report_folder(dir, "bench_attention", o.report.resume, named);
  Environment env(argc, argv, "bench_attention");
  provider->describe(env);
  env.write(dir, false);
  // attention.csv, .jsonl and .prom side by side (the CSV's name without .csv is the base)
  const std::string base = report_base(csv_path);
  // --resume: the cases the report holds already are not run again; new rows go after them.
  const FinishedCases finished = o.report.resume ? FinishedCases(base + ".csv") : FinishedCases();
  ReportFiles files(base, o.report.formats, nlohmann::json{{"run_id", env.run_id()}},
                    "opbench_attention", o.report.resume);
  std::vector<Record> rows;
  Peaks peaks = Peaks::for_device(provider->device(), o.peaks);
  RunTally tally;
  tally.planned = cases.size();
  std::vector<double> flops;
  for (const auto& c : cases)
    flops.push_back(static_cast<double>(c.shape.flops(c.pass)));
  Progress progress(flops, o.report.quiet);
  progress.note(fmt::format("backend: {} ({} on {}; {})", provider->backend(), provider->name(),
                            provider->device(), choice.reason));
  ConsoleTable table({{"model", "", 16},
                      {"batch_size", "b", 2},
                      {"seqlen_q", "sq", 6},
                      {"seqlen_kv", "skv", 6},
                      {"num_head_q", "hq", 3},
                      {"num_head_kv", "hkv", 3},
                      {"head_dim_qk", "dqk", 3},
                      {"head_dim_v", "dv", 3},
                      {"causal", "", 6},
                      {"dtype", "", 5},
                      {"pass", "", 4},
                      {"time_us", "", 10},
                      {"tflops", "", 7},
                      {"max_abs_err", "max_err", 8},
                      {"status", "", 7}});
  const MeasureOptions measure = attention_measure(choice.backend, o.measure);
  progress.set_stop_bound(stop_bound(measure));
  AttentionRunOptions run{measure, o.check, o.check_heads};
  CaseLoop loop(progress, &table, harness, tally, rows);
  // --resume: the earlier run's rows count, and stay in the .prom and the summary.
  if (!cases.empty())
    loop.carry_earlier(files, finished,
                       attention_row(cases.front(), *provider, AttentionResult{}, peaks));
  install_interrupt_handlers();
  for (const auto& c : cases) {
    const std::string label = fmt::format("{} {} {} {}", c.shape.model, c.shape.dims(),
                                          dtype_name(c.shape.dtype), attention_pass_name(c.pass));
    const std::optional<Record> done =
        finished.earlier(attention_row(c, *provider, AttentionResult{}, peaks));
    const bool went_on =
        loop.run(label, static_cast<double>(c.shape.flops(c.pass)), files, done, [&] {
          AttentionResult r = run_attention_case(*provider, c, run);
          Record row = attention_row(c, *provider, r, peaks);
          std::string line =
              r.status == Status::ok
                  ? fmt::format("{}  {}  {}", label, time_text(r.measurement.stats.mean),
                                flops_rate_text(std::get<double>(*row.find("tflops"))))
                  : fmt::format("{}  {}: {}", label, status_name(r.status), r.note);
          return MeasuredRow{std::move(row), r.measurement, std::move(line)};
        });
    if (!went_on) break;
  }
  return close_run(
      env, dir, o.report.summary_path, rows,
      {fmt::format("bench_attention on {}", provider->device()),
       "tflops",
       true,
       {"model", "batch_size", "seqlen_q", "seqlen_kv", "num_head_q", "num_head_kv", "head_dim_qk",
        "head_dim_v", "causal", "dtype", "pass", "time_us", "tflops", "max_abs_err"},
       15,
       {harness.markdown()}},
      tally, {harness.text(), dir, files.listing(), true}, interrupted(),
      interrupted() ? interrupted_exit_code() : 0);
}

}  // namespace opbench
