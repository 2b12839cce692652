#include "common/summary.hpp"

#include "common/owned_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "common/error.hpp"
#include "common/owned_files.hpp"
#include "common/report.hpp"
#include "common/run_tally.hpp"

namespace opbench {
namespace {

std::string text(const Record& r, const std::string& field) {
  const Value* v = r.find(field);
  return v ? format_for_people(*v) : "";
}

double number(const Record& r, const std::string& field) {
  if (const auto* d = r.get<double>(field)) return *d;
  if (const auto* i = r.get<std::int64_t>(field)) return static_cast<double>(*i);
  return 0;
}

std::string cell(const std::string& s) {  // Markdown table cells cannot hold a bare |
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string summary_markdown(const Environment& env, const std::vector<Record>& rows,
                             const SummarySpec& spec) {
  const auto& j = env.json();
  std::string md = fmt::format("# {}\n\n## Environment\n\n| | |\n|---|---|\n", spec.title);
  auto line = [&](const std::string& k, const std::string& v) {
    md += fmt::format("| {} | {} |\n", k, cell(v));
  };
  for (const auto& d : j["devices"]) {
    std::string what = d.value("name", "");
    if (d.contains("compute_capability"))
      what +=
          fmt::format(" (sm {}, {} SMs, {} MiB L2, max SM clock {} MHz)",
                      d["compute_capability"].get<std::string>(), d["sm_count"].get<int>(),
                      d["l2_bytes"].get<std::uint64_t>() >> 20, d["max_sm_clock_mhz"].get<int>());
    line(d.value("kind", "gpu") == "cpu" ? "device (CPU)" : "GPU", what);
  }
  for (const auto& [name, version] : j["libraries"].items())
    line(name, version.get<std::string>());
  line("CPU",
       fmt::format("{} ({} threads)", j["cpu"].get<std::string>(), j["cpu_threads"].get<int>()));
  line("host", fmt::format("{} ({})", j["host"].get<std::string>(), j["os"].get<std::string>()));
  line("command line", "`" + j["command_line"].get<std::string>() + "`");
  line("opbench",
       fmt::format("{}, git {}, {} build", j["opbench_version"].get<std::string>(),
                   j["git_revision"].get<std::string>(), j["build_type"].get<std::string>()));
  line("started / ended",
       fmt::format("{} / {}", j["start_time"].get<std::string>(),
                   j["end_time"].is_null() ? "-" : j["end_time"].get<std::string>()));

  RunTally counted;
  counted.planned = spec.planned ? spec.planned : rows.size();
  std::vector<const Record*> measured;
  for (const auto& r : rows) {
    if (!spec.tally) counted.add(r);
    if (text(r, "status") == "ok" && !text(r, spec.headline).empty()) measured.push_back(&r);
  }
  const RunTally& tally = spec.tally ? *spec.tally : counted;
  md += fmt::format("\n## Results\n\n{}.\n", tally.line());
  if (tally.noisy)
    md += fmt::format(
        "\n{} of the ok rows {} noisy: sampling stopped at --max-time before the relative "
        "standard error of the mean (rse) fell below --max-noise; their figures are marked "
        "(noisy) and are less certain than the others.\n",
        tally.noisy, tally.noisy == 1 ? "is" : "are");
  std::sort(measured.begin(), measured.end(), [&](const Record* a, const Record* b) {
    return spec.higher_is_better ? number(*a, spec.headline) > number(*b, spec.headline)
                                 : number(*a, spec.headline) < number(*b, spec.headline);
  });
  if (!measured.empty()) {
    std::string rule;
    for (std::size_t i = 0; i < spec.columns.size(); ++i)
      rule += "---|";
    md += fmt::format("\n{} {} by {}:\n\n| {} |\n|{}\n",
                      measured.size() > spec.top ? "The " + spec.first_are : std::string("All"),
                      std::min(measured.size(), spec.top), spec.headline,
                      fmt::join(spec.columns, " | "), rule);
    for (std::size_t i = 0; i < measured.size() && i < spec.top; ++i) {
      std::vector<std::string> cells;
      for (const auto& c : spec.columns)
        cells.push_back(cell(text(*measured[i], c)) +
                        (c == spec.headline && is_noisy(*measured[i]) ? " (noisy)" : ""));
      md += fmt::format("| {} |\n", fmt::join(cells, " | "));
    }
  }
  std::vector<std::string> problems;
  for (const auto& r : rows)
    if (text(r, "status") != "ok" && problems.size() < 20) {
      std::vector<std::string> what;
      for (const auto& c : spec.columns)
        if (c != spec.headline) what.push_back(text(r, c));
      problems.push_back(
          fmt::format("- {} {}: {}", text(r, "status"), fmt::join(what, " "), text(r, "note")));
    }
  if (!problems.empty())
    md += fmt::format("\n## Skipped and failed\n\n{}\n", fmt::join(problems, "\n"));
  for (const auto& e : spec.extra)
    md += "\n" + e + "\n";
  return md;
}

void write_summary(const std::string& path, const Environment& env, const std::vector<Record>& rows,
                   const SummarySpec& spec) {
  claim_output(path);
  std::ofstream out(path);
  out << summary_markdown(env, rows, spec);
  if (!out) throw run_failure(fmt::format("{}: cannot be written", path));
}

int close_run(Environment& env, const std::string& report_dir, const std::string& summary_path,
              const std::vector<Record>& rows, SummarySpec summary, const RunTally& tally,
              const RunEnd& end, bool stopped, int stopped_code) {
  env.set("outcome", run_outcome(tally, stopped));
  env.write(report_dir, true);
  if (!summary_path.empty()) {
    summary.tally = &tally;
    summary.planned = tally.planned;
    write_summary(summary_path, env, rows, summary);
  }
  return finish_run(tally, end, stopped, stopped_code);
}

}  // namespace opbench
