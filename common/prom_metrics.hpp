#pragma once
// How a report's columns become Prometheus metrics, following Prometheus' naming and exposition
// conventions (https://prometheus.io/docs/practices/naming/): base units (`_seconds`, `_bytes`,
// ratios 0-1 as `_ratio`), one metric family per quantity (the statistics of one time are one
// family told apart by a `stat` label), a HELP that says what the number is, and labels that
// identify the case and nothing more. What describes a case's run (status, device, algorithm,
// working set...) goes into `<prefix>_case_info`, what describes the run into `<prefix>_run_info`,
// so two runs of the same case continue one series.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/record.hpp"

namespace opbench {

// Where one numeric column goes: family `<prefix>_<family>`, its value times `scale` (µs ->
// seconds, GB/s -> bytes per second, percent -> ratio), and, when `label` is set, the label
// `label="value"` that tells it from the family's other columns.
struct PromColumn {
  std::string family;
  double scale = 1;
  std::string label, value;
};

// nullopt: a column no table row describes (the writer falls back to its sanitised name and a
// HELP saying so, which the promtool test refuses).
std::optional<PromColumn> prom_column(std::string_view column);
// What the family's number is; empty for an unknown family.
std::string prom_family_help(std::string_view family);
// The HELP of a column no row describes: the test looks for it.
inline constexpr std::string_view kPromUndescribed = "not described for Prometheus";

// Whether a text or integer column identifies the case (a label of every metric) or describes
// how it ran (a label of `<prefix>_case_info` only). `prefix` is the metric prefix of the
// report (`opbench_gemm`): a few columns identify the case in one kind and not in another.
bool prom_column_identifies_case(std::string_view prefix, std::string_view column);

// The Prometheus text of a report's rows: every numeric column as its family's sample, one
// `<prefix>_case_info` sample per case, and `<prefix>_run_info` from `run`'s scalar fields
// (run_id) and the opbench version. A case written twice keeps its later values.
std::string prometheus_text(const std::vector<Record>& rows, const std::string& prefix,
                            const nlohmann::json& run);

}  // namespace opbench
