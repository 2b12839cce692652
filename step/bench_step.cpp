#include "step/bench_step.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "common/backend.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/hardware.hpp"
#include "common/interrupt.hpp"
#include "common/json_reader.hpp"
#include "common/model_list.hpp"
#include "common/owned_files.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
#include "common/summary.hpp"
#include "common/text.hpp"
#include "step/capture_times.hpp"
#include "step/family_calibration.hpp"
#include "step/step_console.hpp"
#include "step/step_measure.hpp"
#include "step/step_memory.hpp"
#include "step/step_operators.hpp"
#include "step/step_options.hpp"
#include "step/step_rows.hpp"
#include "trace/trace_source.hpp"

namespace opbench {
namespace {

using Plan = std::vector<std::vector<StepOperator>>;  // the operators of every stage

Plan plan_of(const StepConfig& c) {
  Plan plan;
  for (std::int64_t s = 0; s < c.pp; ++s)
    plan.push_back(step_operators(c, s));
  return plan;
}

// Where the operators' times come from: the job's capture first (--capture-path), then the
// reports (--from-reports and this run's measurement).
struct TimeSources {
  std::optional<CaptureTimes> capture;
  std::optional<ReportTimes> reports;
  std::string threading;  // how a CPU measurement was threaded, for the summary
  std::optional<OperatorTime> find(const StepOperator& op) const {
    if (capture)
      if (auto t = capture->find(op)) return t;
    return reports ? reports->find(op) : std::nullopt;
  }
};

std::vector<StageOperators> timed(const Plan& plan, const TimeSources* times) {
  std::vector<StageOperators> stages;
  for (const auto& ops : plan) {
    StageOperators stage;
    for (const auto& op : ops)
      stage.push_back({op, times ? times->find(op) : std::nullopt});
    stages.push_back(std::move(stage));
  }
  return stages;
}

// The device the times ran on: the one most of the busiest stage's times name.
std::string times_device(const StageOperators& stage) {
  std::map<std::string, int> votes;
  for (const auto& t : stage)
    if (t.time && !t.time->device.empty()) ++votes[t.time->device];
  std::string best;
  int most = 0;
  for (const auto& [device, n] : votes)
    if (n > most) best = device, most = n;
  return best;
}

// Says how much of the step the job's own times cover, before anything is measured, and returns
// how many operators that is. A capture or trace with no timed call calibrates nothing (an
// execution trace records shapes, not times), nor does one whose timed shapes are not the
// step's: whoever gave one must not take the projection for a calibrated one.
std::size_t say_job_coverage(const JobShapesOptions& job, const CaptureTimes& capture,
                             const std::vector<Plan>& plans, bool quiet) {
  std::set<std::string> all, timed;
  for (const auto& plan : plans)
    for (const auto& stage : plan)
      for (const auto& op : stage) {
        all.insert(op.identity());
        if (capture.find(op)) timed.insert(op.identity());
      }
  const std::string where = fmt::format("{} {}", job.flag(), job.path());
  if (capture.shapes() == 0)
    fmt::print(stderr,
               "note: {}: no call there has a time (an execution trace records shapes only; a "
               "profiler trace or a capture has the job's times): nothing is calibrated, each of "
               "the step's {} operators has an isolated time\n",
               where, all.size());
  else if (timed.empty())
    fmt::print(stderr,
               "note: {}: none of its {} timed shapes is one of the step's {} operators (another "
               "--seq-len, --micro-batch, --tp or --dtype than the job's?): nothing is "
               "calibrated\n",
               where, capture.shapes(), all.size());
  else if (!quiet)
    fmt::print(stderr,
               "times from the job ({}): {} of the step's {} operators, each its in-job average; "
               "the others' times are isolated ones\n",
               where, timed.size(), all.size());
  return timed.size();
}

// The times the run is given, the job's capture (--capture-path / --trace-path) and earlier
// reports (--from-reports), read before the report folder is made: a bad path fails with
// nothing written. `from` gets their names for times_from.
TimeSources given_times(const StepOptions& o, const std::vector<Plan>& plans,
                        std::vector<std::string>& from) {
  TimeSources times;
  if (o.job.wanted()) {
    const ShapeSource source = trace::job_shape_source(o.job);
    print_source_notes(source);
    times.capture = CaptureTimes::load(source);
    // times_from names the capture only where it timed something (step.csv, the summary)
    if (say_job_coverage(o.job, *times.capture, plans, o.report.quiet) > 0)
      from.push_back("captured");
  }
  if (!o.from_reports.empty()) {
    times.reports = ReportTimes::load(o.from_reports);
    from.push_back("reports");
  }
  return times;
}

// To the given times, measures what they lack (the collectives apart: they need ranks, bench_ccl
// measures them), then reads every report back, the new ones included. An interrupt ends the
// measuring at the operator it cuts short; the operators measured before it are in their
// family's report (`measured_files`) and count like any other time.
TimeSources gather_times(const StepOptions& o, const std::vector<Plan>& plans, TimeSources times,
                         std::vector<std::string> from, const std::string& report_dir,
                         Environment& env, std::string& times_from,
                         std::vector<std::string>& measured_files) {
  times_from = fmt::format("{}", fmt::join(from, "+"));
  if (!o.measure) return times;
  std::vector<StepOperator> all;
  for (const auto& plan : plans)
    for (const auto& stage : plan)
      all.insert(all.end(), stage.begin(), stage.end());
  // The measured operators' reports are read back as CSV (ReportTimes), so CSV is always one of
  // their formats; --format adds the others.
  StepMeasureOptions mo{.model = o.model,
                        .backend = o.backend,
                        .device = o.device,
                        .measure = o.measure_flags,
                        .check = o.check,
                        .quiet = o.report.quiet,
                        .threads = o.threads,
                        .blas_threads = o.blas_threads,
                        .formats = o.report.formats};
  mo.formats.insert(ReportFormat::csv);
  const StepMeasureResult r = measure_step_operators(
      all, [&](const StepOperator& op) { return times.find(op).has_value(); }, mo, report_dir, env);
  measured_files = r.files;
  times.threading = r.threading;
  if (r.measured + r.failed + r.skipped == 0) return times;
  std::vector<std::string> dirs = o.from_reports;
  dirs.push_back(report_dir);
  from.push_back("measured");
  times_from = fmt::format("{}", fmt::join(from, "+"));
  times.reports = ReportTimes::load(dirs, report_dir);
  return times;
}

// The memory a configuration must fit on the device: --memory-capacity-gib, else the entry of
// hardware.json that matches the device the times ran on, else, for times measured on this
// machine's CPU, its MemTotal; unknown otherwise (mem_capacity_gib and fits left empty).
struct Capacity {
  std::optional<double> gib;
  std::string source;
};

Capacity memory_capacity(const StepOptions& o, const std::string& device, bool measured_on_cpu) {
  if (o.memory_capacity_gib) return {o.memory_capacity_gib, "--memory-capacity-gib"};
  if (!device.empty()) {
    const std::string path = o.peaks.hardware_config_path.empty()
                                 ? find_config_file("hardware.json")
                                 : o.peaks.hardware_config_path;
    const auto entry = match_device(load_hardware_table(path), device);
    if (entry && entry->memory_gib) return {entry->memory_gib, entry->name + ", hardware.json"};
  }
  if (measured_on_cpu)
    if (auto gib = host_memory_gib()) return {gib, "this machine's MemTotal"};
  return {};
}

double stage_flops(const StageOperators& stage) {
  double f = 0;
  for (const auto& t : stage)
    f += static_cast<double>(t.op.count) * static_cast<double>(t.op.hardware_flops);
  return f;
}

// --fits-only: the configurations (and their plans) whose peak memory fits `gib`; returns how
// many were left out.
std::size_t keep_fitting(std::vector<StepConfig>& configs, double gib) {
  const std::size_t before = configs.size();
  std::erase_if(configs,
                [&](const StepConfig& c) { return !*memory_fits(busiest_memory(c), gib); });
  return before - configs.size();
}

void print_left_out(std::size_t left_out, const Capacity& capacity) {
  if (left_out > 0)
    fmt::print(stderr,
               "--fits-only: {} configuration{} left out: peak memory above {:.1f} GiB ({})\n",
               left_out, left_out == 1 ? "" : "s", *capacity.gib, capacity.source);
}

// --dry-run: the operator lists and the memory per rank on stdout; with --operators-csv-path also
// every stage's operators as step_operators.csv rows without times, the list of what a GPU run
// has to measure; with --report-csv-path or --report-dir-path the configurations' rows (step.csv)
// with their memory and without times.
int dry_run(const StepOptions& o, const std::vector<StepConfig>& configs,
            const std::vector<Plan>& plans) {
  std::unique_ptr<CsvWriter> csv, steps;
  if (!o.operators_csv_path.empty()) csv = std::make_unique<CsvWriter>(o.operators_csv_path);
  if (!o.report_csv_path.empty() || !o.report.report_dir.empty())
    steps = std::make_unique<CsvWriter>(
        o.report_csv_path.empty()
            ? (std::filesystem::path(o.report.report_dir) / "step.csv").string()
            : o.report_csv_path);
  const Capacity capacity = memory_capacity(o, "", false);
  // What a measured run would read is read now, so that a bad path or table fails here too.
  if (o.job.wanted()) {
    const ShapeSource source = trace::job_shape_source(o.job);
    print_source_notes(source);
    const CaptureTimes job = CaptureTimes::load(source);
    fmt::print(stderr, "{} {}: {} with the job's own times would replace the isolated ones\n",
               o.job.flag(), o.job.path(), counted(job.shapes(), "shape"));
  }
  if (o.report.formats_given && o.report.formats != std::set<ReportFormat>{ReportFormat::csv})
    fmt::print(stderr,
               "note: --dry-run writes CSV only (step.csv, step_operators.csv); the other "
               "--format files come from a measured run\n");
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const auto stages = timed(plans[i], nullptr);
    print_operator_list(configs[i], stages, stdout);
    const StepMemory memory = busiest_memory(configs[i]);
    print_memory(memory, capacity.gib, capacity.source, stdout);
    if (steps) {
      // No times: the FLOPs, and the stage with the most (the operator list's), are known.
      StepProjection none;
      none.model_flops = total_model_flops(configs[i], stages);
      none.hardware_flops = total_hardware_flops(configs[i], stages);
      for (std::size_t s = 0; s < stages.size(); ++s)
        if (stage_flops(stages[s]) > stage_flops(stages[static_cast<std::size_t>(none.stage)]))
          none.stage = static_cast<std::int64_t>(s);
      steps->write(step_row(configs[i], none, "none", "", std::nullopt, memory, capacity.gib));
    }
    if (!csv) continue;
    for (std::size_t s = 0; s < stages.size(); ++s) {
      StepProjection at_stage;
      at_stage.stage = static_cast<std::int64_t>(s);
      for (const auto& t : stages[s])
        csv->write(operator_row(configs[i], t, at_stage));
    }
  }
  if (csv) fmt::print(stderr, "operator list: {} ({})\n", csv->path(), counted(csv->rows(), "row"));
  if (steps)
    fmt::print(stderr, "configurations: {} ({})\n", steps->path(), counted(steps->rows(), "row"));
  return 0;
}

// `row` with its note replaced: a configuration left without a step time by an interrupt says so
// before naming the operators it lacks, so the row is not read as a plan that cannot be timed.
Record with_note(const Record& row, const std::string& note) {
  Record out;
  for (const Field& f : row.fields()) {
    const Value v = f.name == "note" ? Value{note} : f.value;
    switch (f.kind) {
      case FieldKind::arg:
        out.arg(f.name, v);
        break;
      case FieldKind::metric:
        out.metric(f.name, v);
        break;
      case FieldKind::result:
        out.result(f.name, v);
        break;
    }
  }
  out.extra() = row.extra();
  return out;
}

// --fits-only before anything is measured, where the capacity is known without the times: the
// configurations that do not fit are left out, and said so. False when none is left.
bool keep_fitting_early(const StepOptions& o, std::vector<StepConfig>& configs,
                        bool measured_on_cpu) {
  if (!o.fits_only) return true;
  const Capacity early = memory_capacity(o, "", measured_on_cpu);
  if (early.gib) {
    print_left_out(keep_fitting(configs, *early.gib), early);
    if (configs.empty()) {
      fmt::print(stderr, "--fits-only: no configuration fits; nothing to project\n");
      return false;
    }
  } else if (o.dry_run) {
    throw bad_input(
        "--fits-only: the device's memory is unknown in a dry run; give "
        "--memory-capacity-gib");
  }
  return true;
}

// Where the reports go: the folder, and the base paths of step.csv and step_operators.csv (the
// earlier run's files there set aside).
struct StepReportPaths {
  std::string dir, base, operators_base;
};

StepReportPaths step_report_paths(const StepOptions& o) {
  StepReportPaths paths;
  paths.dir = resolve_report_dir(o.report.report_dir, o.report_csv_path, "step");
  paths.base = report_base(o.report_csv_path.empty()
                               ? (std::filesystem::path(paths.dir) / "step.csv").string()
                               : o.report_csv_path);
  paths.operators_base =
      o.operators_csv_path.empty() ? paths.base + "_operators" : report_base(o.operators_csv_path);
  std::vector<NamedOutput> named =
      report_outputs("--report-csv-path", paths.base, o.report.formats);
  for (auto& out : report_outputs("--operators-csv-path", paths.operators_base, o.report.formats))
    named.push_back(std::move(out));
  named.push_back({"--summary-path", o.report.summary_path});
  set_aside_earlier_reports(paths.dir, named);
  return paths;
}

// The step rows of a run, as they were projected and written.
struct Projections {
  std::vector<Record> rows;
  std::vector<StepProjection> projected;
  std::string text;  // the console's projections, for --summary-path
  bool complete = true;
  std::size_t whole = 0, not_fitting = 0, late_left_out = 0;
  Capacity late_capacity;
};

// Every configuration's step from its operators' times: its row in step.csv, its busiest stage's
// operators in step_operators.csv, its projection and memory on the console.
Projections project_steps(const StepOptions& o, const std::vector<StepConfig>& configs,
                          const std::vector<Plan>& plans, const TimeSources& times,
                          const std::string& times_from, bool measured_on_cpu,
                          ReportFiles& step_files, ReportFiles& operator_files) {
  // Interrupted while measuring: the step rows are still written from the times there are (a
  // configuration whose operators all have one is whole), then the run exits 130 or 143.
  const bool cut_short = interrupted();
  Projections out;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const StepConfig& c = configs[i];
    auto stages = timed(plans[i], &times);
    if (times.capture) {
      const FamilyCalibration families = calibrate_families(c, stages, *times.capture);
      if (!families.not_done.empty()) fmt::print(stderr, "note: {}\n", families.not_done);
      if (!o.report.quiet)
        for (const std::string& line : families.scaled)
          fmt::print(stderr, "times from the job: {}\n", line);
    }
    // MFU against the peak of the device the times come from (hardware.json, or --peak-tflops).
    std::string device = times_device(stages.back());
    const Peaks peaks = Peaks::for_device(device, o.peaks);
    const std::optional<double> peak = peaks.tflops(c.dtype);
    const StepMemory memory = busiest_memory(c);
    const Capacity capacity = memory_capacity(o, device, measured_on_cpu);
    const std::optional<bool> fits = memory_fits(memory, capacity.gib);
    if (o.fits_only && fits == false) {  // the capacity came with the times
      ++out.late_left_out;
      out.late_capacity = capacity;
      continue;
    }
    if (fits == false) ++out.not_fitting;
    StepProjection p = compose_step(c, stages, peak);
    out.projected.push_back(p);
    out.complete = out.complete && p.step_ms.has_value();
    out.whole += p.step_ms.has_value();
    out.rows.push_back(step_row(c, p, times_from.empty() ? "none" : times_from, device, peak,
                                memory, capacity.gib));
    Record& row = out.rows.back();
    if (cut_short && !p.step_ms) {
      const std::string* missing = row.get<std::string>("note");
      row = with_note(row, fmt::format("interrupted ({}) before every operator was "
                                       "measured; {}",
                                       interrupted_signal_name(), missing ? *missing : ""));
    }
    step_files.write(row);
    for (const auto& t : stages[static_cast<std::size_t>(p.stage)])
      operator_files.write(operator_row(c, t, p));
    print_projection(c, stages, p, stdout);
    print_memory(memory, capacity.gib, capacity.source, stdout);
    if (!o.report.summary_path.empty()) out.text += projection_text(c, stages, p);
  }
  return out;
}

// What a finished run says on stderr, and its exit code: the reports written, the
// configurations left out or not fitting, an interrupt, operators without a time.
int report_end(const Projections& p, std::size_t configs,
               const std::vector<std::vector<std::string>>& listings) {
  std::fflush(stdout);
  for (const auto& files : listings)
    for (const auto& line : files)
      fmt::print(stderr, "  {}\n", line);
  print_left_out(p.late_left_out, p.late_capacity);
  if (p.not_fitting > 0)
    fmt::print(stderr, "{} configuration{} do{} not fit the device's memory (fits=false)\n",
               p.not_fitting, p.not_fitting == 1 ? "" : "s", p.not_fitting == 1 ? "es" : "");
  if (interrupted()) {
    fmt::print(stderr,
               "interrupted ({}): {} of {} configurations have a step time; every operator "
               "measured before it is in the reports above\n",
               interrupted_signal_name(), p.whole, configs);
    return interrupted_exit_code();
  }
  if (!p.complete)
    fmt::print(stderr,
               "error: some configurations have operators without a time (listed "
               "above); their step time is left empty\n");
  return p.complete ? 0 : static_cast<int>(ExitCode::run_failed);
}

}  // namespace

int bench_step_main(int argc, char** argv) {
  auto parsed = parse_step_options(argc, argv);
  if (!parsed) return 0;
  const StepOptions& o = *parsed;
  if (o.list_models) return print_model_list(o.model_config_path);
  const std::string models_path =
      o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
  const ModelConfig model = select_models(load_models(models_path), o.model, models_path).front();
  const bool measuring = o.measure && !o.dry_run;
  std::optional<BackendChoice> choice;
  if (measuring) choice = choose_backend(o.backend, o.device);
  // The CPU providers compute in fp32; reports from a GPU are mostly bf16. A dry run plans for the
  // --backend it is given (PyTorch's optimizer there, the dtype its providers use).
  const Backend device =
      choice ? choice->backend : (o.backend == "cpu" ? Backend::cpu : Backend::cuda);
  const DType dtype = o.dtype.value_or(backend_traits(device).default_dtype);
  std::vector<StepConfig> configs = step_configurations(o, model, dtype, device);
  const bool measured_on_cpu = measuring && device == Backend::cpu;
  if (!keep_fitting_early(o, configs, measured_on_cpu)) return 0;
  std::vector<Plan> plans;
  for (const auto& c : configs)
    plans.push_back(plan_of(c));
  if (o.dry_run) return dry_run(o, configs, plans);

  std::vector<std::string> given_from;
  TimeSources given = given_times(o, plans, given_from);
  const StepReportPaths paths = step_report_paths(o);
  Environment env(argc, argv, "bench_step");
  env.write(paths.dir, false);
  install_interrupt_handlers();

  std::string times_from;
  std::vector<std::string> measured_files;
  const TimeSources times = gather_times(o, plans, std::move(given), std::move(given_from),
                                         paths.dir, env, times_from, measured_files);
  const nlohmann::json run{{"run_id", env.run_id()}};
  ReportFiles step_files(paths.base, o.report.formats, run, "opbench_step");
  ReportFiles operator_files(paths.operators_base, o.report.formats, run, "opbench_step_operator");
  const Projections p = project_steps(o, configs, plans, times, times_from, measured_on_cpu,
                                      step_files, operator_files);
  const std::string fusion = fusion_text(configs, p.projected);
  fmt::print("{}", fusion);
  env.write(paths.dir, true);
  if (!o.report.summary_path.empty())
    write_summary(o.report.summary_path, env, p.rows,
                  {fmt::format("bench_step: {}, times from {}", o.model,
                               times_from.empty() ? "none" : times_from),
                   "tokens_per_s",
                   true,
                   {"model", "world_size", "tp", "pp", "dp", "micro_batch", "seqlen", "dtype",
                    "kernels", "step_time_ms", "tokens_per_s", "mfu", "times_from"},
                   15,
                   {"## Where the step's time goes\n\n```\n" + p.text + fusion + "```" +
                    (times.threading.empty() ? "" : "\n\n" + times.threading + ".")}});
  return report_end(p, configs.size(),
                    {measured_files, step_files.listing(), operator_files.listing()});
}

}  // namespace opbench
