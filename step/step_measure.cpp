#include "step/step_measure.hpp"

#include <fmt/format.h>

#include <memory>
#include <set>

#include "attention/attention_options.hpp"
#include "attention/attention_run.hpp"
#include "common/backend.hpp"
#include "common/case_loop.hpp"
#include "common/cpu_parallel.hpp"
#include "common/hardware.hpp"
#include "common/harness_cost.hpp"
#include "common/interrupt.hpp"
#include "common/progress.hpp"
#include "common/text.hpp"
#include "gemm/gemm_row.hpp"
#include "gemm/gemm_run.hpp"
#include "memops/memop_operands.hpp"
#include "memops/memop_row.hpp"
#include "memops/memop_run.hpp"

namespace opbench {
namespace {

constexpr const char* kReport = "step";  // gemm_step.csv, attention_step.csv, memops_step.csv

// The providers of one backend, each made when its first operator comes.
class StepProviders {
 public:
  StepProviders(Backend backend, int device) : backend_(backend), device_(device) {}

  GemmProviders& gemm(bool experts) {
    if (!gemm_.dense) gemm_.dense = make_gemm_provider(backend_, device_);
    if (experts && !gemm_.experts) gemm_.experts = make_gemm_expert_provider(backend_, device_);
    return gemm_;
  }
  AttentionProvider& attention() {
    if (!attention_) attention_ = make_attention_provider(backend_, "", device_);
    return *attention_;
  }
  MemopProvider& memop() {
    if (!memop_) memop_ = make_memop_provider(backend_, "", device_);
    return *memop_;
  }

 private:
  Backend backend_;
  int device_;
  GemmProviders gemm_;
  std::unique_ptr<AttentionProvider> attention_;
  std::unique_ptr<MemopProvider> memop_;
};

GemmCase gemm_case(const StepOperator& op, const std::string& model) {
  GemmCase c;
  c.report = kReport;
  c.model = model;
  // The operator's name is "<layer> <pass>[ (recomputed)]" for GEMMs and experts.
  const std::vector<std::string> words = split(op.name, ' ');
  c.gemm = words.front();
  c.pass = words.size() > 1 ? words[1] : "";
  c.problem = op.gemm;
  c.note = op.note;
  if (op.family == StepFamily::experts) {
    ExpertCase x;
    x.impl = op.moe_impl;
    x.experts = op.experts;
    x.group_tokens = op.experts.tokens;
    c.problem = op.experts.padded();
    c.experts = std::move(x);
  }
  return c;
}

struct Measuring {
  const StepMeasureOptions& o;
  StepProviders providers;
  MeasureOptions measure, attention_measure;
  Progress& progress;
  CaseLoop& loop;
  ReportSets& gemm_reports;
  ReportSets& attention_reports;
  ReportSets& memop_reports;

  bool gemm(const StepOperator& op, const std::string& label) {
    GemmCase c = gemm_case(op, o.model);
    GemmProviders& p = providers.gemm(c.experts.has_value());
    const Peaks peaks = Peaks::for_device(p.dense->device(), {});
    ReportFiles& f = gemm_reports.open(kReport, gemm_row(c, p.id_for(c), GemmResult{}, peaks));
    GemmRunOptions run;
    run.measure = measure;
    run.check = o.check;
    return loop.run(label, static_cast<double>(c.flops()), f, std::nullopt, [&] {
      GemmResult r = run_gemm_case(p, c, run, Fp8Accumulation::by_pass);
      Record row = gemm_row(c, p.id_for(c), r, peaks);
      std::string line = gemm_progress_line(c, row, r);
      return MeasuredRow{std::move(row), r.measurement, std::move(line)};
    });
  }

  bool attention(const StepOperator& op, const std::string& label) {
    AttentionCase c{op.attention, op.attention_pass, "", std::nullopt};
    c.shape.model = o.model;
    AttentionProvider& p = providers.attention();
    const Peaks peaks = Peaks::for_device(p.device(), {});
    ReportFiles& f = attention_reports.open(kReport, attention_row(c, p, AttentionResult{}, peaks));
    const AttentionRunOptions run{attention_measure, o.check, 4};
    return loop.run(label, static_cast<double>(c.shape.flops(c.pass)), f, std::nullopt, [&] {
      AttentionResult r = run_attention_case(p, c, run);
      Record row = attention_row(c, p, r, peaks);
      std::string line = r.status == Status::ok
                             ? fmt::format("{}  {}", label, time_text(r.measurement.stats.mean))
                             : fmt::format("{}  {}: {}", label, status_name(r.status), r.note);
      return MeasuredRow{std::move(row), r.measurement, std::move(line)};
    });
  }

  bool memop(const StepOperator& op, const std::string& label) {
    MemopCase c = op.memop;
    c.report = kReport;
    c.source = o.model;
    MemopProvider& p = providers.memop();
    ReportFiles& f = memop_reports.open(kReport, memop_row(c, p, MemopResult{}, {}));
    const MemopRunOptions run{measure, o.check, false, false};
    return loop.run(label, static_cast<double>(memop_io_bytes(c)), f, std::nullopt, [&] {
      MemopResult r = run_memop_case(p, c, run);
      Record row = memop_row(c, p, r, {});
      std::string line = memop_progress_line(label, row, r);
      return MeasuredRow{std::move(row), r.measurement, std::move(line)};
    });
  }
};

}  // namespace

std::string cpu_threading_note(unsigned threads, unsigned blas_threads) {
  const unsigned n = threads > 0 ? threads : usable_cores();
  const unsigned b = blas_threads > 0 ? blas_threads : usable_cores();
  return fmt::format(
      "threads: {} for the memory-bound and attention operators, {} for OpenBLAS's GEMMs "
      "({} of {} CPUs this process may run on), each operator measured alone. Inside a job "
      "they differ: PyTorch runs its elementwise kernels on its intra-op pool "
      "(torch.set_num_threads) while OpenBLAS keeps a pool of its own, and the two contend for "
      "the same cores; --capture-path puts the job's own GEMM times in",
      n, b, threads > 0 || blas_threads > 0 ? "--threads/--blas-threads" : "all", usable_cores());
}

StepMeasureResult measure_step_operators(const std::vector<StepOperator>& ops,
                                         const std::function<bool(const StepOperator&)>& has_time,
                                         const StepMeasureOptions& o, const std::string& report_dir,
                                         Environment& env) {
  std::vector<const StepOperator*> todo;
  std::set<std::string> seen;
  for (const auto& op : ops)
    if (op.family != StepFamily::collective && seen.insert(op.identity()).second && !has_time(op))
      todo.push_back(&op);
  StepMeasureResult result;
  if (todo.empty()) return result;

  const BackendChoice choice = choose_backend(o.backend, o.device);
  const MeasureProfile profile = backend_traits(choice.backend).profile;
  HarnessCost harness;
  Progress progress(todo.size(), static_cast<double>(todo.size()), o.quiet);
  progress.note(fmt::format("measuring {} operators on the {} ({})", todo.size(),
                            backend_traits(choice.backend).device_kind, choice.reason));
  if (choice.backend == Backend::cpu) {
    limit_cpu_threads(o.threads, o.blas_threads);
    result.threading = cpu_threading_note(o.threads, o.blas_threads);
    progress.note(result.threading);
  }
  ConsoleTable table({{"gemm", "", 14},
                      {"op", "", 13},
                      {"pass", "", 5},
                      {"dtype", "", 5},
                      {"time_us", "", 10},
                      {"status", "", 7}});
  std::vector<Record> rows;
  RunTally tally;
  tally.planned = todo.size();
  CaseLoop loop(progress, &table, harness, tally, rows);
  ReportOptions report;
  report.formats = o.formats;
  const nlohmann::json run{{"run_id", env.run_id()}};
  ReportSets gemm_reports(report_dir, "gemm", report, run, "opbench_gemm", loop);
  ReportSets attention_reports(report_dir, "attention", report, run, "opbench_attention", loop);
  ReportSets memop_reports(report_dir, "memops", report, run, "opbench_memops", loop);
  Measuring m{o,
              StepProviders(choice.backend, o.device),
              resolve(profile, o.measure),
              attention_measure(choice.backend, o.measure),
              progress,
              loop,
              gemm_reports,
              attention_reports,
              memop_reports};
  for (const StepOperator* op : todo) {
    // A memory-bound operator's arguments start with its name ("cross_entropy fwd 16x1024
    // fp32"): said once on the progress line.
    const std::string args = op->args();
    const std::string label = args.rfind(op->name, 0) == 0 ? args : op->name + "  " + args;
    bool went_on = true;
    switch (op->family) {
      case StepFamily::gemm:
      case StepFamily::experts:
        went_on = m.gemm(*op, label);
        break;
      case StepFamily::attention:
        went_on = m.attention(*op, label);
        break;
      case StepFamily::memop:
        went_on = m.memop(*op, label);
        break;
      case StepFamily::collective:
        break;
    }
    if (!went_on || interrupted()) {
      result.interrupted = true;
      break;
    }
  }
  progress.note(fmt::format("measured: {}", tally.line()));
  result.measured = tally.ok;
  result.skipped = tally.skipped;
  result.failed = tally.failed;
  for (const auto* sets : {&gemm_reports, &attention_reports, &memop_reports})
    for (const auto& line : sets->listing())
      result.files.push_back(line);
  return result;
}

}  // namespace opbench
