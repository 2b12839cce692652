#include "gemm/bench_gemm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "common/backend.hpp"
#include "common/case_loop.hpp"
#include "common/device_profile.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/hardware.hpp"
#include "common/harness_cost.hpp"
#include "common/interrupt.hpp"
#include "common/json_reader.hpp"
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
#include "gemm/capture_cases.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/fp8_policy.hpp"
#include "gemm/gemm_cases.hpp"
#include "gemm/gemm_options.hpp"
#include "gemm/gemm_row.hpp"
#include "gemm/gemm_run.hpp"
#include "gemm/provider.hpp"
#include "trace/trace_source.hpp"

#ifdef OPBENCH_HAVE_CUDA
#include "common/cuda/device.hpp"
#endif

namespace opbench {
namespace {

std::string models_path(const GemmOptions& o) {
  return o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
}

// --gemm: keeps the model cases of the layers named; a name no model has is an error (with the
// closest layer name), never a silently empty run.
void keep_layers(std::vector<GemmCase>& cases, const std::vector<std::string>& layers) {
  if (layers.empty()) return;
  std::vector<std::string> known;
  for (const auto& c : cases)
    if (std::find(known.begin(), known.end(), c.gemm) == known.end()) known.push_back(c.gemm);
  for (const auto& name : layers) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string near = closest_match(name, known);
    throw bad_input(fmt::format("--gemm: no model layer is called '{}'{} (layers: {})", name,
                                near.empty() ? "" : " (did you mean '" + near + "'?)",
                                fmt::join(known, ", ")));
  }
  std::erase_if(cases, [&](const GemmCase& c) {
    return std::find(layers.begin(), layers.end(), c.gemm) == layers.end();
  });
}

std::vector<GemmCase> build_cases(const GemmOptions& o, const std::vector<DType>& dtypes) {
  if (!o.wants_models() && o.shapes_path.empty() && !o.wants_sweep() && !o.job.wanted())
    throw bad_input(
        "nothing to run: give --model-config-path and/or --model, --shapes-json-path, "
        "--capture-path, --trace-path, or --m/--n/--k");
  std::vector<GemmCase> cases;
  if (o.wants_models()) {
    auto path = models_path(o);
    for (const auto& model : select_models(load_models(path), o.models, path)) {
      const auto seqlens = o.cp > 1 ? context_parallel_seqlens(model, o.seqlens, o.cp) : o.seqlens;
      auto more = model_cases(model, o.tp, o.micro_batches, seqlens, o.passes, dtypes, o.moe);
      cases.insert(cases.end(), more.begin(), more.end());
    }
    keep_layers(cases, o.layers);
  } else if (!o.layers.empty()) {
    throw bad_input("--gemm picks layers of models: give --model or --model-config-path too");
  }
  if (!o.shapes_path.empty()) {
    auto more = shape_file_cases(o.shapes_path, dtypes);
    cases.insert(cases.end(), more.begin(), more.end());
  }
  if (o.wants_sweep()) {
    auto more = sweep_cases(o.ms, o.ns, o.ks, o.sweep_batch, o.layout, dtypes);
    cases.insert(cases.end(), more.begin(), more.end());
  }
  if (o.job.wanted()) {
    // captured shapes keep their own dtype (the job's); one it lacks is a skipped row
    std::vector<std::string> left_out;
    const ShapeSource source = trace::job_shape_source(o.job);
    print_source_notes(source);
    auto more = capture_cases({source, o.job.rank}, &left_out);
    for (const auto& why : left_out)
      fmt::print(stderr, "warning: {}: left out {}\n", o.job.flag(), why);
    if (more.empty() && left_out.empty() && cases.empty())
      throw bad_input(fmt::format(
          "{} {}: no GEMM in the job's tables (a job of collectives only, or tables without "
          "rows): nothing for bench_gemm to run",
          o.job.flag(), o.job.path()));
    cases.insert(cases.end(), more.begin(), more.end());
  }
  return cases;
}

// The GPU a dry run plans for: none (the CPU), the GPU here, a profile, or — when cuda is asked
// for and there is no GPU — Hopper, said in `assumption`.
struct DryRunTarget {
  bool gpu = false;
  int cc_major = 0, cc_minor = 0;
  std::string assumption;
};

DryRunTarget dry_run_target(const GemmOptions& o) {
  DryRunTarget t;
  if (!o.device_profile.empty()) {
    const DeviceProfile p = load_device_profile(o.device_profile);
    return {true, p.cc_major, p.cc_minor, "planned for " + p.description + " (--device-profile)"};
  }
  try {
    const BackendChoice choice = choose_backend(o.backend, o.device);
    if (choice.backend == Backend::cpu) return t;
#ifdef OPBENCH_HAVE_CUDA
    const CudaDeviceInfo info = cuda_device_info(o.device);
    return {true, info.cc_major, info.cc_minor, "planned for " + info.name + ", the GPU here"};
#endif
  } catch (const Error&) {
    // --backend cuda with no GPU here: the plan is still worth reading before a GPU is rented.
    if (!built_with_cuda() || to_lower(o.backend) != "cuda") throw;
  }
  return {true, 9, 0,
          "no GPU here: planned as cuBLASLt runs it on compute capability 9.0 (Hopper); "
          "--device-profile b200 plans Blackwell's fp8 layouts"};
}

// The per-expert token counts behind the expert rows, once per model and routing.
void print_expert_counts(const std::vector<GemmCase>& cases) {
  std::set<std::string> shown;
  for (const auto& c : cases) {
    if (!c.experts) continue;
    const ExpertCase& x = *c.experts;
    const std::string what = fmt::format("{} mb {} seq {}: {} routing, ep {}", c.model,
                                         c.micro_batch, c.seqlen, x.routing, x.ep);
    if (!shown.insert(what).second) continue;
    const ExpertGemm& e = x.experts;
    fmt::print("{}\n  tokens per expert ({} experts): {}\n", what, x.group_tokens.size(),
               fmt::join(x.group_tokens, " "));
    fmt::print(
        "  most loaded rank {} of {}: experts {}..{} with {} tokens ({} in all); padded to {} "
        "each, the padded GEMM does {:.0f}% useful work\n",
        x.rank, x.ep, x.rank * e.experts() + 1, (x.rank + 1) * e.experts(),
        fmt::join(e.tokens, " "), e.total_tokens(), e.max_tokens(),
        100.0 * e.efficiency().value_or(0.0));
  }
}

int dry_run(std::vector<GemmCase> cases, const DryRunTarget& target, Fp8Accumulation fp8_accum) {
  ConsoleTable table({{"model", "", 16},
                      {"gemm", "", 18},
                      {"pass", "", 5},
                      {"impl", "", 7},
                      {"batch", "", 5},
                      {"m", "", 6},
                      {"n", "", 6},
                      {"k", "", 6},
                      {"layout", "", 6},
                      {"dtype", "", 8},
                      {"calls_per_step", "calls", 5},
                      {"gflop", "", 10},
                      {"note", "", 40}});
  if (!target.assumption.empty()) std::printf("%s\n", target.assumption.c_str());
  double total = 0;
  for (auto& c : cases) {
    std::string note;
    if (target.gpu && c.problem.dtype == DType::fp8_e4m3 && !c.experts) {
      c.problem = fp8_layout_as_run(c.problem, target.cc_major, target.cc_minor, &note);
      append_note(note, fp8_accumulation_name(fp8_fast_accumulation(fp8_accum, c.pass)));
    }
    Record r;
    r.arg("model", c.model).arg("gemm", c.gemm).arg("pass", c.pass);
    r.arg("impl", c.experts ? moe_impl_name(c.experts->impl) : "");
    r.arg("batch", c.problem.batch).arg("m", c.problem.m);
    r.arg("n", c.problem.n).arg("k", c.problem.k).arg("layout", c.problem.layout());
    r.arg("dtype", std::string(dtype_name(c.problem.dtype)))
        .arg("calls_per_step", c.calls_per_step);
    r.metric("gflop", static_cast<double>(c.flops()) / 1e9);
    r.result("note", note);
    table.print(r);
    total += static_cast<double>(c.flops());
  }
  std::printf("%s, %.1f GFLOP in all (one run of each)\n", counted(cases.size(), "case").c_str(),
              total / 1e9);
  print_expert_counts(cases);
  return 0;
}

}  // namespace

int bench_gemm_main(int argc, char** argv) {
  HarnessCost harness;
  auto parsed = parse_gemm_options(argc, argv);
  if (!parsed) return 0;
  GemmOptions o = *parsed;
  if (o.list_models) return print_model_list(o.model_config_path);

  if (o.dry_run) {
    const DryRunTarget target = dry_run_target(o);
    return dry_run(build_cases(o, o.dtypes.value_or(
                                      std::vector<DType>{target.gpu ? DType::bf16 : DType::fp32})),
                   target, o.fp8_accum);
  }
  BackendChoice choice = choose_backend(o.backend, o.device);
  std::vector<DType> dtypes =
      o.dtypes.value_or(std::vector<DType>{backend_traits(choice.backend).default_dtype});
  std::vector<GemmCase> cases = build_cases(o, dtypes);

  const std::string report_dir =
      o.report.report_dir.empty() ? "reports/gemm-" + now_compact() : o.report.report_dir;
  ensure_directory(report_dir);
  prepare_report_folder(report_dir, "bench_gemm", o.report.resume,
                        {{"--summary-path", o.report.summary_path}});
  GemmProviders providers{make_gemm_provider(choice.backend, o.device), nullptr};
  GemmProvider* provider = providers.dense.get();
  std::vector<double> flops;
  for (const auto& c : cases) {
    flops.push_back(static_cast<double>(c.flops()));
    if (c.experts && !providers.experts)
      providers.experts = make_gemm_expert_provider(choice.backend, o.device);
  }
  Progress progress(flops, o.report.quiet);
  progress.note(fmt::format("backend: {} ({} on {}; {})", provider->backend(), provider->name(),
                            provider->device(), choice.reason));
  if (providers.experts && providers.experts->name() != provider->name())
    progress.note(fmt::format("routed experts: {}", providers.experts->name()));
  Environment env(argc, argv, "bench_gemm");
  provider->describe(env);
  if (providers.experts) providers.experts->describe(env);
  env.write(report_dir, false);
  Peaks peaks = Peaks::for_device(provider->device(), o.peaks);
  progress.note(fmt::format("peaks: {}", peaks.describe()));

  const MeasureOptions measure = resolve(backend_traits(choice.backend).profile, o.measure);
  progress.set_stop_bound(stop_bound(measure));
  GemmRunOptions run_options{measure, o.cold, o.check, o.algo_candidates, o.corrupt_for_test};
  std::vector<Record> rows;
  ConsoleTable table({{"model", "", 14},
                      {"gemm", "", 18},
                      {"pass", "", 5},
                      {"impl", "", 7},
                      {"m", "", 6},
                      {"n", "", 6},
                      {"k", "", 6},
                      {"dtype", "", 8},
                      {"time_us", "", 10},
                      {"tflops", "", 7},
                      {"pct_peak_flops", "%peak", 5},
                      {"status", "", 7}});
  std::vector<std::string> models, gemms;
  for (const auto& c : cases) {
    models.push_back(c.model);
    gemms.push_back(c.gemm);
  }
  table.fit("model", models);
  table.fit("gemm", gemms);
  RunTally tally;
  tally.planned = cases.size();
  CaseLoop loop(progress, &table, harness, tally, rows);
  ReportSets reports(report_dir, "gemm", o.report, {{"run_id", env.run_id()}}, "opbench_gemm",
                     loop);
  install_interrupt_handlers();
  for (auto& c : cases) {
    if (interrupted()) break;
    ReportFiles& f = reports.open(c.report, gemm_row(c, providers.id_for(c), GemmResult{}, peaks));
    const std::optional<Record> done = reports.earlier(
        c.report, gemm_row(providers.as_run(c, nullptr), providers.id_for(c), GemmResult{}, peaks));
    const bool went_on = loop.run(gemm_case_label(c), static_cast<double>(c.flops()), f, done, [&] {
      GemmResult r = run_gemm_case(providers, c, run_options, o.fp8_accum);
      Record row = gemm_row(c, providers.id_for(c), r, peaks);
      std::string line = gemm_progress_line(c, row, r);
      return MeasuredRow{std::move(row), r.measurement, std::move(line)};
    });
    if (!went_on) break;
  }
  return close_run(env, report_dir, o.report.summary_path, rows,
                   {fmt::format("bench_gemm on {}", provider->device()),
                    "tflops",
                    true,
                    {"model", "gemm", "pass", "impl", "m", "n", "k", "dtype", "time_us", "tflops",
                     "pct_peak_flops", "cv"},
                    15,
                    {harness.markdown()}},
                   tally, {harness.text(), report_dir, reports.listing(), true}, interrupted(),
                   interrupted() ? interrupted_exit_code() : 0);
}

}  // namespace opbench
