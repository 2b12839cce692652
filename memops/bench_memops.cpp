#include "memops/bench_memops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "common/backend.hpp"
#include "common/case_loop.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/hardware.hpp"
#include "common/harness_cost.hpp"
#include "common/int_math.hpp"
#include "common/interrupt.hpp"
#include "common/json_reader.hpp"
#include "common/model_list.hpp"
#include "common/owned_files.hpp"
#include "common/progress.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
#include "common/resume.hpp"
#include "common/rotation.hpp"
#include "common/run_tally.hpp"
#include "common/summary.hpp"
#include "common/text.hpp"
#include "memops/memop_cases.hpp"
#include "memops/memop_operands.hpp"
#include "memops/memop_options.hpp"
#include "memops/memop_provider.hpp"
#include "memops/memop_row.hpp"
#include "memops/memop_run.hpp"

namespace opbench {
namespace {

std::vector<MemopCase> build_cases(const MemopOptions& o, const std::vector<DType>& dtypes) {
  if (!o.wants_models() && o.shapes_path.empty() && o.sizes.empty())
    throw bad_input(
        "nothing to run: give --model-config-path and/or --model, --shapes-json-path, or --size "
        "(with --op)");
  std::vector<MemopCase> cases;
  if (o.wants_models()) {
    const std::string path =
        o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
    for (const auto& model : select_models(load_models(path), o.models, path))
      for (DType t : dtypes) {
        MemopModelRun run = o.model_run;
        if (o.cp > 1) run.seqlens = context_parallel_seqlens(model, run.seqlens, o.cp);
        auto more = model_memop_cases(model, run, o.ops, o.passes, t);
        cases.insert(cases.end(), more.begin(), more.end());
      }
    merge_same_cases(cases);  // the router's fp32 softmax under every --dtype
  }
  if (!o.shapes_path.empty()) {
    auto more = memop_shape_file_cases(o.shapes_path, dtypes);
    if (!o.ops.empty())
      std::erase_if(more, [&](const MemopCase& c) {
        return std::find(o.ops.begin(), o.ops.end(), c.op) == o.ops.end();
      });
    cases.insert(cases.end(), more.begin(), more.end());
  }
  if (!o.sizes.empty()) {
    auto more = memop_sweep_cases(o.ops, o.passes, o.sizes, o.cols, o.vocab, dtypes);
    cases.insert(cases.end(), more.begin(), more.end());
  }
  return cases;
}

std::string case_label(const MemopCase& c) {
  return fmt::format("{} {} {} {} {}", c.source, memop_name(c.op), mem_pass_name(c.pass), c.dims(),
                     dtype_name(c.dtype));
}

int dry_run(const std::vector<MemopCase>& cases) {
  ConsoleTable table({{"model", "", 16},
                      {"op", "", 15},  // addcdiv_inplace
                      {"pass", "", 4},
                      {"rows", "", 8},
                      {"cols", "", 8},
                      {"dtype", "", 5},
                      {"calls_per_step", "calls", 5},
                      {"read_mib", "", 10},
                      {"write_mib", "", 10},
                      {"note", "", 40}});
  double total = 0;
  for (const auto& c : cases) {
    Record r;
    r.arg("model", c.source).arg("op", memop_name(c.op)).arg("pass", mem_pass_name(c.pass));
    r.arg("rows", c.rows).arg("cols", c.cols).arg("dtype", std::string(dtype_name(c.dtype)));
    r.arg("calls_per_step", c.calls_per_step);
    r.metric("read_mib", static_cast<double>(memop_read_bytes(c)) / (1 << 20));
    r.metric("write_mib", static_cast<double>(memop_write_bytes(c)) / (1 << 20));
    r.result("note", c.note);
    table.print(r);
    total += static_cast<double>(memop_io_bytes(c));
  }
  std::printf("%s, %s moved in all (one run of each)\n", counted(cases.size(), "case").c_str(),
              human_bytes(total).c_str());
  return 0;
}

BandwidthRoof make_roof(std::optional<double> gbps, std::string source, bool measured = false) {
  BandwidthRoof roof;
  roof.gbps = gbps;
  roof.source = std::move(source);
  roof.measured = measured;
  return roof;
}

// The bandwidth roof of the run's device.
BandwidthRoof bandwidth_roof(const MemopOptions& o, const MemopProvider& provider,
                             Progress& progress) {
  if (o.peaks.peak_bw_gbps) return make_roof(o.peaks.peak_bw_gbps, "--peak-bw");
  const Peaks peaks = Peaks::for_device(provider.device(), o.peaks);
  if (auto gbps = peaks.bandwidth_gbps()) return make_roof(gbps, "hardware.json");
  if (provider.backend() != "cpu") return {};
  progress.note(
      "measuring the CPU's memory roof (copy, scale, add, triad, read and update loops over every "
      "core; --peak-bw skips it)");
  const CpuMemoryRoof cpu = measure_cpu_memory_roof();
  std::vector<std::string> loops;
  BandwidthRoof roof = make_roof(cpu.gbps, "best loop: " + cpu.best, true);
  for (const auto& [name, gbps] : cpu.loops) {
    loops.push_back(fmt::format("{} {:.1f}", name, gbps));
    if (name == "copy") {
      roof.copy_gbps = gbps;
      roof.copy_source = "the memory roof's copy loop";
    }
  }
  progress.note(fmt::format("memory loops (GB/s): {}", join(loops, ", ")));
  return roof;
}

// A device copy of `elements` in `dtype` (rows of at most 4096, as even as they divide: the
// elements of a size that is no multiple of 4096, not the nearest multiple below it), as a case.
MemopCase copy_case(std::int64_t elements, DType dtype) {
  const std::int64_t rows = ceil_div(elements, 4096);
  const std::int64_t cols = ceil_div(elements, rows);
  return memop_sweep_cases({MemOp::copy}, {MemPass::fwd}, {rows * cols}, cols, 32768, {dtype})
      .front();
}

// The provider that measures the copies: the first that runs one (cuDNN's runs only norms).
MemopProvider& copy_provider(const std::vector<std::unique_ptr<MemopProvider>>& providers,
                             DType dtype) {
  for (const auto& p : providers)
    if (!p->unsupported(copy_case(4096, dtype))) return *p;
  return *providers.front();
}

// A device copy of `elements` in `dtype`, measured by `provider` as the operators are (its check
// off): GB/s counting bytes read and written, or nothing, with why in `why`.
std::optional<double> measure_copy(MemopProvider& provider, std::int64_t elements, DType dtype,
                                   const MemopRunOptions& run, std::string& why) {
  const MemopCase copy = copy_case(elements, dtype);
  MemopRunOptions quiet = run;
  quiet.check = false;
  quiet.corrupt_for_test = false;
  const MemopResult r = run_memop_case(provider, copy, quiet);
  const double mean_us = r.measurement.stats.mean;
  if (r.status != Status::ok || !(mean_us > 0)) {
    why = r.note;
    return std::nullopt;
  }
  return static_cast<double>(memop_io_bytes(copy)) / (mean_us * 1e-6) / 1e9;
}

// The run's copy rate (pct_of_copy) where the roof's loops gave none: bench_memops's own device
// copy, measured here by the copying provider as the operators are (rotated past the cache), on
// 2^28 elements (512 MiB each way in bf16) on a GPU and 2^23 (32 MiB each way in fp32) on the
// CPU. Skipped when no case is read against device memory (only link copies).
void add_copy_rate(BandwidthRoof& roof, const std::vector<MemopCase>& cases,
                   MemopProvider& provider, const MemopRunOptions& run, DType dtype,
                   Progress& progress) {
  if (roof.copy_gbps || std::none_of(cases.begin(), cases.end(), against_device_memory)) return;
  const std::int64_t elements = std::int64_t{1} << (provider.backend() == "cpu" ? 23 : 28);
  std::string why;
  roof.copy_gbps = measure_copy(provider, elements, dtype, run, why);
  if (!roof.copy_gbps) {
    progress.note(fmt::format("copy rate: not measured ({}); pct_of_copy stays empty", why));
    return;
  }
  roof.copy_source = fmt::format("copy of {} {} elements", elements, dtype_name(dtype));
}

// Device copies of a row's own bytes (copy_same_bytes_gbps), for the rows that move less than a
// quarter of the run's reference copy (1 GiB moved on a GPU, 64 MiB on the CPU): on an H200 the
// norms of Llama 3.1 70B's tp-8 shard (1024 x 8192, 16 MB each way) ran at 55% of the run's
// copy of 512 MiB, ours and cuDNN's alike; whether a copy of those bytes fares better says
// whether the kernel or the size is short. Each size and dtype once, by the provider that
// measured the run's copy.
class SameBytesCopies {
 public:
  SameBytesCopies(MemopProvider& provider, const MemopRunOptions& run)
      : provider_(provider), run_(run) {}

  std::optional<double> rate(const MemopCase& c) {
    const std::int64_t io = memop_io_bytes(c);
    const std::int64_t below = provider_.backend() == "cpu" ? kCpuBelow : kGpuBelow;
    if (!against_device_memory(c) || c.op == MemOp::copy || io >= below) return std::nullopt;
    const std::int64_t elements =
        std::max<std::int64_t>(1, io / 2 / static_cast<std::int64_t>(dtype_size(c.dtype)));
    const auto key = std::make_pair(elements, c.dtype);
    if (const auto it = seen_.find(key); it != seen_.end()) return it->second;
    std::string why;
    return seen_[key] = measure_copy(provider_, elements, c.dtype, run_, why);
  }

 private:
  static constexpr std::int64_t kGpuBelow = std::int64_t{1} << 28;
  static constexpr std::int64_t kCpuBelow = std::int64_t{1} << 24;
  MemopProvider& provider_;
  MemopRunOptions run_;
  std::map<std::pair<std::int64_t, DType>, std::optional<double>> seen_;
};

}  // namespace

int bench_memops_main(int argc, char** argv) {
  HarnessCost harness;
  auto parsed = parse_memop_options(argc, argv);
  if (!parsed) return 0;
  const MemopOptions& o = *parsed;
  if (o.list_models) return print_model_list(o.model_config_path);
  if (o.dry_run) {
    const bool gpu = to_lower(o.backend) == "cuda";
    return dry_run(
        build_cases(o, o.dtypes.value_or(std::vector<DType>{gpu ? DType::bf16 : DType::fp32})));
  }
  const BackendChoice choice = choose_backend(o.backend, o.device);
  const std::vector<DType> dtypes =
      o.dtypes.value_or(std::vector<DType>{backend_traits(choice.backend).default_dtype});
  const std::vector<MemopCase> cases = build_cases(o, dtypes);

  const std::string report_dir =
      o.report.report_dir.empty() ? "reports/memops-" + now_compact() : o.report.report_dir;
  ensure_directory(report_dir);
  prepare_report_folder(report_dir, "bench_memops", o.report.resume,
                        {{"--summary-path", o.report.summary_path}});
  auto providers = make_memop_providers(choice.backend, o.providers, o.device);
  MemopProvider& primary = *providers.front();
  std::vector<double> bytes;  // each planned row's, in the order they run
  for (const auto& c : cases)
    for (std::size_t p = 0; p < providers.size(); ++p)
      if (p == 0 || !providers[p]->unsupported(c))
        bytes.push_back(static_cast<double>(memop_io_bytes(c)));
  Progress progress(bytes, o.report.quiet);
  for (const auto& p : providers)
    progress.note(fmt::format("backend: {} ({} on {}; {})", p->backend(), p->name(), p->device(),
                              choice.reason));
  Environment env(argc, argv, "bench_memops");
  for (const auto& p : providers)
    p->describe(env);
  BandwidthRoof roof = bandwidth_roof(o, primary, progress);
  if (roof.gbps) {
    progress.note(fmt::format("memory roof: {} ({})", bandwidth_text(*roof.gbps), roof.source));
    env.set("memory_roof", {{"gbps", *roof.gbps}, {"source", roof.source}});
  }
  const MeasureOptions measure = resolve(backend_traits(choice.backend).profile, o.measure);
  progress.set_stop_bound(stop_bound(measure));
  const MemopRunOptions run{measure, o.check, o.cold, o.corrupt_for_test};
  MemopProvider& copier = copy_provider(providers, dtypes.front());
  add_copy_rate(roof, cases, copier, run, dtypes.front(), progress);
  if (roof.copy_gbps) {
    progress.note(fmt::format("copy rate: {} ({}; pct_of_copy is each row's GB/s against it)",
                              bandwidth_text(*roof.copy_gbps), roof.copy_source));
    env.set("copy_rate", {{"gbps", *roof.copy_gbps}, {"source", roof.copy_source}});
  }
  env.write(report_dir, false);

  ConsoleTable table({{"model", "", 12},
                      {"op", "", 15},  // addcdiv_inplace
                      {"pass", "", 4},
                      {"rows", "", 8},
                      {"cols", "", 7},
                      {"dtype", "", 5},
                      {"provider", "", 5},
                      {"time_us", "", 10},
                      {"mem_bw_gbps", "GB/s", 7},
                      {"pct_peak_bw", "%roof", 5},
                      {"pct_of_copy", "%copy", 5},
                      {"status", "", 7}});
  SameBytesCopies same_bytes(copier, run);
  std::vector<Record> rows;
  RunTally tally;
  tally.planned = bytes.size();
  CaseLoop loop(progress, &table, harness, tally, rows);
  ReportSets reports(report_dir, "memops", o.report, {{"run_id", env.run_id()}}, "opbench_memops",
                     loop);
  install_interrupt_handlers();
  bool went_on = true;
  for (const auto& c : cases) {
    for (std::size_t p = 0; p < providers.size() && went_on; ++p) {
      MemopProvider& provider = *providers[p];
      if (p > 0 && provider.unsupported(c)) continue;
      if (interrupted()) {
        went_on = false;
        break;
      }
      ReportFiles& f = reports.open(c.report, memop_row(c, primary, MemopResult{}, roof));
      const std::optional<Record> done =
          reports.earlier(c.report, memop_row(c, provider, MemopResult{}, roof));
      const std::string label = case_label(c) + (providers.size() > 1 ? " " + provider.name() : "");
      went_on = loop.run(label, static_cast<double>(memop_io_bytes(c)), f, done, [&] {
        MemopResult r = run_memop_case(provider, c, run);
        std::optional<double> same;
        try {  // an interrupt now stops the run after this row, which stands without the copy
          if (memop_measured(r)) same = same_bytes.rate(c);
        } catch (const CaseInterrupted&) {
        }
        Record row = memop_row(c, provider, r, roof, same);
        std::string line = memop_progress_line(label, row, r);
        return MeasuredRow{std::move(row), r.measurement, std::move(line)};
      });
    }
    if (!went_on) break;
  }
  return close_run(env, report_dir, o.report.summary_path, rows,
                   {fmt::format("bench_memops on {}", primary.device()),
                    "mem_bw_gbps",
                    true,
                    {"model", "op", "pass", "rows", "cols", "dtype", "provider", "time_us",
                     "mem_bw_gbps", "pct_peak_bw", "pct_of_copy", "cv"},
                    15,
                    {harness.markdown()}},
                   tally, {harness.text(), report_dir, reports.listing(), true}, interrupted(),
                   interrupted() ? interrupted_exit_code() : 0);
}

}  // namespace opbench
