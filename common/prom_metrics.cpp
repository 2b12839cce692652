#include "common/prom_metrics.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
#include <utility>

#include "common/prom_text.hpp"

namespace opbench {
namespace {

constexpr double kMicro = 1e-6, kMilli = 1e-3, kGiga = 1e9, kTera = 1e12, kMega = 1e6,
                 kPercent = 1e-2, kGibi = 1024.0 * 1024.0 * 1024.0;

struct ColumnRow {
  std::string_view column, family;
  double scale;
  std::string_view label, value;
};

// Every numeric column any binary writes (docs/outputs.md), and its family.
constexpr ColumnRow kColumns[] = {
    // the time of one call and its spread over the samples
    {"time_us", "time_seconds", kMicro, "stat", "mean"},
    {"median_us", "time_seconds", kMicro, "stat", "median"},
    {"p50_us", "time_seconds", kMicro, "stat", "median"},
    {"min_us", "time_seconds", kMicro, "stat", "min"},
    {"max_us", "time_seconds", kMicro, "stat", "max"},
    {"p99_us", "time_seconds", kMicro, "stat", "p99"},
    {"min_time_us", "time_seconds", kMicro, "stat", "fastest_rank"},
    {"max_time_us", "time_seconds", kMicro, "stat", "slowest_rank"},
    {"iter_min_us", "time_seconds", kMicro, "stat", "fastest_call"},
    {"iter_max_us", "time_seconds", kMicro, "stat", "slowest_call"},
    {"stddev_us", "time_stddev_seconds", kMicro, "", ""},
    {"cv", "time_cv_ratio", 1, "", ""},
    {"rse", "time_rse_ratio", 1, "", ""},
    {"samples", "samples", 1, "", ""},
    // work, traffic and rates
    {"flops", "flops", 1, "", ""},
    {"padded_flops", "padded_flops", 1, "", ""},
    {"tflops", "flops_per_second", kTera, "", ""},
    {"read_bytes", "read_bytes", 1, "", ""},
    {"write_bytes", "write_bytes", 1, "", ""},
    {"io_bytes", "io_bytes", 1, "", ""},
    {"mem_bw_gbps", "memory_bandwidth_bytes_per_second", kGiga, "", ""},
    {"arith_intensity", "arithmetic_intensity_flops_per_byte", 1, "", ""},
    {"pct_peak_flops", "peak_flops_ratio", kPercent, "", ""},
    {"pct_peak_bw", "peak_bandwidth_ratio", kPercent, "", ""},
    {"roof_gbps", "roof_bandwidth_bytes_per_second", kGiga, "", ""},
    {"copied_bytes", "copied_bytes", 1, "", ""},
    {"copy_gbps", "copy_bandwidth_bytes_per_second", kGiga, "", ""},
    {"copy_rate_gbps", "copy_rate_bytes_per_second", kGiga, "", ""},
    {"pct_of_copy", "copy_rate_ratio", kPercent, "", ""},
    {"copy_same_bytes_gbps", "copy_same_bytes_rate_bytes_per_second", kGiga, "", ""},
    {"pct_of_copy_same_bytes", "copy_same_bytes_ratio", kPercent, "", ""},
    // MoE expert rows
    {"efficiency", "expert_efficiency_ratio", 1, "", ""},
    {"tokens_min", "expert_tokens", 1, "stat", "min"},
    {"tokens_max", "expert_tokens", 1, "stat", "max"},
    {"tokens_total", "expert_tokens", 1, "stat", "sum"},
    // the device and the check
    {"sm_clock_before_mhz", "sm_clock_hertz", kMega, "when", "before"},
    {"sm_clock_after_mhz", "sm_clock_hertz", kMega, "when", "after"},
    {"check_residual", "check_residual", 1, "", ""},
    {"max_abs_err", "check_max_abs_error", 1, "", ""},
    {"check_tolerance", "check_tolerance", 1, "", ""},
    {"tolerance", "check_tolerance", 1, "", ""},
    // --capture-path
    {"captured_calls", "captured_calls", 1, "", ""},
    {"in_job_us", "in_job_time_seconds", kMicro, "", ""},
    {"in_job_ratio", "in_job_ratio", 1, "", ""},
    // collectives
    {"algbw_gbps", "algorithm_bandwidth_bytes_per_second", kGiga, "groups", "one"},
    {"algbw_all_groups_gbps", "algorithm_bandwidth_bytes_per_second", kGiga, "groups", "all"},
    {"busbw_gbps", "bus_bandwidth_bytes_per_second", kGiga, "groups", "one"},
    {"busbw_all_groups_gbps", "bus_bandwidth_bytes_per_second", kGiga, "groups", "all"},
    {"algo_size_bytes", "algorithm_size_bytes", 1, "", ""},
    {"bus_size_bytes", "bus_size_bytes", 1, "", ""},
    {"calls_per_step", "calls_per_step", 1, "", ""},
    // cuDNN's answer to a graph (bench_attention --dry-run)
    {"configurations", "configurations_finalized", 1, "", ""},
    {"offered", "configurations_offered", 1, "", ""},
    {"accepted", "configurations_accepted", 1, "", ""},
    // the projected step (step.csv) and its operators (step_operators.csv)
    {"step_time_ms", "projected_time_seconds", kMilli, "", ""},
    {"gemm_ms", "projected_time_by_part_seconds", kMilli, "part", "gemm"},
    {"attention_ms", "projected_time_by_part_seconds", kMilli, "part", "attention"},
    {"memop_ms", "projected_time_by_part_seconds", kMilli, "part", "memop"},
    {"exposed_comm_ms", "projected_time_by_part_seconds", kMilli, "part", "exposed_comm"},
    {"bubble_ms", "projected_time_by_part_seconds", kMilli, "part", "bubble"},
    {"optimizer_ms", "projected_time_by_part_seconds", kMilli, "part", "optimizer"},
    {"host_ms", "projected_time_by_part_seconds", kMilli, "part", "host"},
    {"host_forward_ms", "projected_host_wait_seconds", kMilli, "phase", "forward"},
    {"host_backward_ms", "projected_host_wait_seconds", kMilli, "phase", "backward"},
    {"host_optimizer_ms", "projected_host_wait_seconds", kMilli, "phase", "optimizer"},
    {"micro_batch_ms", "projected_micro_batch_seconds", kMilli, "", ""},
    {"dp_comm_ms", "data_parallel_comm_seconds", kMilli, "", ""},
    {"hidden_comm_ms", "hidden_comm_seconds", kMilli, "", ""},
    {"tokens_per_s", "tokens_per_second", 1, "", ""},
    {"tokens_per_step", "tokens_per_step", 1, "", ""},
    {"mem_weights_gib", "memory_bytes", kGibi, "part", "weights"},
    {"mem_grads_gib", "memory_bytes", kGibi, "part", "grads"},
    {"mem_optimizer_gib", "memory_bytes", kGibi, "part", "optimizer"},
    {"mem_activations_gib", "memory_bytes", kGibi, "part", "activations"},
    {"mem_peak_gib", "memory_peak_bytes", kGibi, "", ""},
    {"mem_capacity_gib", "memory_capacity_bytes", kGibi, "", ""},
    {"tflops_per_device", "flops_per_second_per_device", kTera, "", ""},
    {"mfu", "model_flops_utilization_ratio", 1, "", ""},
    {"hfu", "hardware_flops_utilization_ratio", 1, "", ""},
    {"peak_tflops", "peak_flops_per_second", kTera, "", ""},
    {"model_flops", "model_flops", 1, "", ""},
    {"hardware_flops", "hardware_flops", 1, "", ""},
    {"busiest_stage", "busiest_stage", 1, "", ""},
    {"total_ms", "per_step_seconds", kMilli, "", ""},
    {"share_of_step", "share_of_step_ratio", 1, "", ""},
};

struct HelpRow {
  std::string_view family, help;
};

constexpr HelpRow kHelp[] = {
    {"time_seconds", "Time of one call as the row names it, by statistic over the timed samples"},
    {"time_stddev_seconds", "Standard deviation of the time of one call over the samples"},
    {"time_cv_ratio", "Coefficient of variation of the samples: stddev / mean"},
    {"time_rse_ratio", "Relative standard error of the mean time: stddev / mean / sqrt(samples)"},
    {"samples", "Timed samples the statistics rest on"},
    {"flops", "Floating-point operations of one call (docs/formulas.md)"},
    {"padded_flops", "Floating-point operations of the padded expert problem"},
    {"flops_per_second", "Achieved floating-point operations per second: flops / time"},
    {"read_bytes", "Bytes one call must read at least once"},
    {"write_bytes", "Bytes one call must write at least once"},
    {"io_bytes", "Bytes one call must read and write: read_bytes + write_bytes"},
    {"memory_bandwidth_bytes_per_second", "Achieved memory bandwidth: io_bytes / time"},
    {"arithmetic_intensity_flops_per_byte", "Floating-point operations per byte: flops / io_bytes"},
    {"peak_flops_ratio", "Achieved FLOPS as a fraction of the device's peak for the dtype"},
    {"peak_bandwidth_ratio", "Achieved bandwidth as a fraction of the device's bandwidth roof"},
    {"roof_bandwidth_bytes_per_second", "The device's bandwidth roof the ratio is taken against"},
    {"copied_bytes", "Copies: the bytes that cross from one memory to the other"},
    {"copy_bandwidth_bytes_per_second", "Copies: copied bytes / time"},
    {"copy_rate_bytes_per_second",
     "The device copy rate of the same run, read and written bytes / time"},
    {"copy_rate_ratio", "Achieved bandwidth as a fraction of the same run's device copy rate"},
    {"copy_same_bytes_rate_bytes_per_second",
     "A device copy of the row's own bytes, read and written bytes / time"},
    {"copy_same_bytes_ratio", "Achieved bandwidth as a fraction of a copy of the row's own bytes"},
    {"expert_efficiency_ratio", "Share of the padded expert work that is real: flops / padded"},
    {"expert_tokens", "Tokens of the most loaded expert-parallel rank's experts, by statistic"},
    {"sm_clock_hertz", "GPU SM clock just before the first and after the last sample"},
    {"check_residual", "--check: Freivalds' largest residual"},
    {"check_max_abs_error", "--check: largest absolute difference from the reference"},
    {"check_tolerance", "--check: the bound the error is held to"},
    {"captured_calls", "--capture-path: the job's calls of this shape or message"},
    {"in_job_time_seconds", "--capture-path: average time of one call inside the captured job"},
    {"in_job_ratio", "--capture-path: time in the job / time measured alone (above 1: slower)"},
    {"algorithm_bandwidth_bytes_per_second",
     "nccl-tests' algbw: algorithm size / time, for one group or summed over the groups"},
    {"bus_bandwidth_bytes_per_second",
     "nccl-tests' busbw: algbw times the op's bus factor, for one group or summed over groups"},
    {"algorithm_size_bytes", "The bytes algbw divides by time (nccl-tests' size)"},
    {"bus_size_bytes", "Algorithm size times the op's bus factor"},
    {"calls_per_step", "How often one training step makes this call"},
    {"configurations_finalized", "cuDNN engine configurations whose execution plan was finalized"},
    {"configurations_offered", "Engine configurations cuDNN's heuristics offered for the graph"},
    {"configurations_accepted", "Engine configurations that accepted the graph"},
    {"projected_time_seconds", "Projected time of one training step"},
    {"projected_time_by_part_seconds",
     "The projected step by part, on the busiest rank; the parts add up to the step"},
    {"projected_host_wait_seconds",
     "The projected host part by the phase whose kernels wait for the framework's launches"},
    {"projected_micro_batch_seconds",
     "Compute and critical-path communication of one micro-batch on the busiest stage"},
    {"data_parallel_comm_seconds", "Data-parallel communication per step, before overlap"},
    {"hidden_comm_seconds", "Data-parallel communication the overlap model hides under compute"},
    {"tokens_per_second", "Tokens per second of the projected step over every replica"},
    {"tokens_per_step", "Tokens of one step over every replica"},
    {"memory_bytes",
     "Memory per rank of the busiest stage by part: weights, gradients, optimizer state, "
     "activations saved for backward"},
    {"memory_peak_bytes",
     "Peak memory per rank: the larger of the backward's start and the optimizer step, "
     "transients included"},
    {"memory_capacity_bytes", "The device's memory the peak is compared with"},
    {"flops_per_second_per_device", "Model FLOPs per second per device of the projected step"},
    {"model_flops_utilization_ratio", "Model FLOPs utilisation against the device's peak"},
    {"hardware_flops_utilization_ratio", "Hardware FLOPs utilisation against the device's peak"},
    {"peak_flops_per_second", "The device's dense peak for the dtype"},
    {"model_flops", "Model FLOPs, Megatron's convention: per step (step) or per call (operator)"},
    {"hardware_flops", "Hardware FLOPs (model FLOPs plus recomputation): per step or per call"},
    {"busiest_stage", "The pipeline stage, 0-based, whose rank the step's figures are"},
    {"per_step_seconds", "The operator's time per training step on the rank: calls x time"},
    {"share_of_step_ratio", "The operator's time per step as a fraction of the projected step"},
};

// Text and integer columns that describe how a case ran, not which case it is: they change
// from run to run (status, algorithm, working set) or follow from the columns that do identify
// it (counts, node layout), so they label `<prefix>_case_info` only.
constexpr std::string_view kDescribesTheRun[] = {
    "status",
    "check",
    "device",
    "algo",
    "engine",
    "engines",
    "first_engine",
    "dims",
    "impl",
    "roof",
    "working_set_bytes",
    "launches_per_sample",
    "calls_per_step",
    "count",
    "iters",
    "wrong",
    "aggregation",
    "ranks_per_node",
    "ranks_per_node_min",
    "ranks_per_node_max",
    "group_spans_nodes",
    "nodes",
    "num_groups",
    "group_stride",
    "times_from",
    "time_from",
    "source",
    "part",
    "fits",
    "args",
    "ep_rank",
};

// ... except where the column is what tells two cases apart: bench_gemm's expert rows run one
// case per `impl` (grouped, loop, padded); the engine dry run asks one `device` profile each.
constexpr std::pair<std::string_view, std::string_view> kIdentifiesIn[] = {
    {"opbench_gemm", "impl"},
    {"opbench_attention_engines", "device"},
};

}  // namespace

std::optional<PromColumn> prom_column(std::string_view column) {
  for (const auto& row : kColumns)
    if (row.column == column)
      return PromColumn{std::string(row.family), row.scale, std::string(row.label),
                        std::string(row.value)};
  return std::nullopt;
}

std::string prom_family_help(std::string_view family) {
  for (const auto& row : kHelp)
    if (row.family == family) return std::string(row.help);
  return {};
}

bool prom_column_identifies_case(std::string_view prefix, std::string_view column) {
  for (const auto& [p, c] : kIdentifiesIn)
    if (p == prefix && c == column) return true;
  for (const auto& c : kDescribesTheRun)
    if (c == column) return false;
  return true;
}

namespace {

std::string sanitised(const std::string& name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// A sample value as the exposition format spells it.
std::string sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{:.7g}", v);
}

// One metric family: its HELP, the columns it came from, and its samples by series. A series is
// keyed by the labels that identify it, so a case written twice keeps its later value (and its
// _info the later description): a textfile holds one value per series.
struct Family {
  std::string help;
  std::vector<std::string> columns;
  std::vector<std::string> keys;
  std::map<std::string, std::pair<std::string, std::string>> samples;  // key -> labels, value
  void add(const std::string& key, const std::string& labels, std::string value) {
    if (!samples.count(key)) keys.push_back(key);
    samples[key] = {labels, std::move(value)};
  }
  void add(const std::string& labels, std::string value) { add(labels, labels, std::move(value)); }
};

std::string label_text(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string out;
  for (const auto& [name, value] : labels)
    out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", name, prom_label_value(value));
  return out;
}

// HELP text escapes backslash and line feed (the exposition format's rule for HELP).
std::string help_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string prometheus_text(const std::vector<Record>& rows, const std::string& prefix,
                            const nlohmann::json& run) {
  std::map<std::string, Family> families;
  auto family = [&](const std::string& name, const std::string& help) -> Family& {
    Family& f = families[prefix + "_" + name];
    if (f.help.empty()) f.help = help;
    return f;
  };
  for (const auto& row : rows) {
    std::vector<std::pair<std::string, std::string>> identity, description;
    for (const auto& f : row.fields()) {
      if (f.kind == FieldKind::metric || f.name == "note" ||
          std::holds_alternative<std::monostate>(f.value))
        continue;
      (prom_column_identifies_case(prefix, f.name) ? identity : description)
          .emplace_back(f.name, format_value(f.value));
    }
    const std::string case_labels = label_text(identity);
    auto info = identity;
    info.insert(info.end(), description.begin(), description.end());
    family("case_info",
           "What describes each case's latest run (status, device, algorithm, working set); "
           "always 1")
        .add(case_labels, label_text(info), "1");
    for (const auto& f : row.fields()) {
      if (f.kind != FieldKind::metric || std::holds_alternative<std::monostate>(f.value) ||
          std::holds_alternative<std::string>(f.value))
        continue;
      const auto column = prom_column(f.name);
      const PromColumn spec = column ? *column : PromColumn{sanitised(f.name), 1, "", ""};
      Family& fam = family(spec.family,
                           column ? prom_family_help(spec.family) : std::string(kPromUndescribed));
      const std::string source =
          spec.label.empty() ? f.name : fmt::format("{} ({}={})", f.name, spec.label, spec.value);
      if (std::find(fam.columns.begin(), fam.columns.end(), source) == fam.columns.end())
        fam.columns.push_back(source);
      std::string labels = case_labels;
      if (!spec.label.empty())
        labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", spec.label, spec.value);
      if (const auto* i = std::get_if<std::int64_t>(&f.value); i && spec.scale == 1)
        fam.add(labels, std::to_string(*i));
      else
        fam.add(labels, sample_value((std::holds_alternative<double>(f.value)
                                          ? std::get<double>(f.value)
                                          : static_cast<double>(std::get<std::int64_t>(f.value))) *
                                     spec.scale));
    }
  }
  std::vector<std::pair<std::string, std::string>> run_labels;
  for (const auto& [key, value] : run.items())
    if (value.is_string())
      run_labels.emplace_back(sanitised(key), value.get<std::string>());
    else if (value.is_number() || value.is_boolean())
      run_labels.emplace_back(sanitised(key), value.dump());
  run_labels.emplace_back("opbench_version", OPBENCH_VERSION);
  family("run_info",
         "The run that wrote this file (run_id is the key into environment.json); "
         "always 1")
      .add(label_text(run_labels), "1");

  std::string out;
  for (const auto& [name, f] : families) {
    std::string help = f.help;
    if (!f.columns.empty()) {
      help += ". From the report's column";
      help += f.columns.size() > 1 ? "s " : " ";
      for (std::size_t i = 0; i < f.columns.size(); ++i)
        help += (i ? ", " : "") + f.columns[i];
    }
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help_text(help), name);
    for (const auto& key : f.keys) {
      const auto& [labels, value] = f.samples.at(key);
      out += fmt::format("{}{} {}\n", name, labels.empty() ? "" : "{" + labels + "}", value);
    }
  }
  return out;
}

}  // namespace opbench
