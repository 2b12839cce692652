#include "common/report_files.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/owned_files.hpp"
#include "common/prom_metrics.hpp"
#include "common/report.hpp"
#include "common/text.hpp"

namespace opbench {

std::set<ReportFormat> parse_report_formats(const std::string& text) {
  std::set<ReportFormat> out;
  for (const auto& item : split(text, ',')) {
    auto f = to_lower(item);
    if (f == "csv")
      out.insert(ReportFormat::csv);
    else if (f == "jsonl")
      out.insert(ReportFormat::jsonl);
    else if (f == "prom")
      out.insert(ReportFormat::prom);
    else
      throw bad_input(
          fmt::format("--format: unknown format '{}' (accepted: csv, jsonl, prom)", item));
  }
  if (out.empty()) throw bad_input("--format: empty list");
  return out;
}

ReportFiles::ReportFiles(std::string base_path, std::set<ReportFormat> formats, nlohmann::json run,
                         std::string prom_prefix, bool append, std::vector<std::string> csv_columns)
    : base_(std::move(base_path)),
      formats_(std::move(formats)),
      prom_prefix_(std::move(prom_prefix)),
      run_(run),
      append_(append) {
  if (formats_.count(ReportFormat::csv))
    csv_ = std::make_unique<CsvWriter>(base_ + ".csv", append, std::move(csv_columns));
  if (formats_.count(ReportFormat::jsonl))
    jsonl_ = std::make_unique<JsonlWriter>(base_ + ".jsonl", std::move(run), append);
}

void ReportFiles::write(const Record& row) {
  if (csv_) csv_->write(row);
  if (jsonl_) jsonl_->write(row);
  if (formats_.count(ReportFormat::prom)) {
    prom_rows_.push_back(row);
    const std::string path = base_ + ".prom", tmp = path + ".tmp";
    claim_output(path, append_ ? OutputUse::continued : OutputUse::fresh);
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) throw bad_input(fmt::format("{}: cannot be written", tmp));
    std::string text = prometheus_text(prom_rows_, prom_prefix_, run_);
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0)
      throw run_failure(fmt::format("{}: write failed", path));
  }
  ++rows_;
}

void ReportFiles::carry(const Record& earlier_row) {
  if (formats_.count(ReportFormat::prom)) prom_rows_.push_back(earlier_row);
  ++rows_;
}

std::vector<std::string> ReportFiles::listing() const {
  std::vector<std::string> out;
  for (const auto& path : paths())
    out.push_back(fmt::format("{} ({})", path, counted(rows_, "row")));
  return out;
}

std::vector<std::string> ReportFiles::paths() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& named : report_outputs("", base_, formats_))
    if (std::filesystem::exists(named.path, ec)) out.push_back(named.path);
  return out;
}

std::string resolve_report_dir(const std::string& report_dir, const std::string& csv_path,
                               const std::string& binary) {
  std::string dir = report_dir;
  if (dir.empty())
    dir = csv_path.empty() ? "reports/" + binary + "-" + now_compact()
                           : std::filesystem::path(csv_path).parent_path().string();
  if (dir.empty()) dir = ".";
  ensure_directory(dir);
  return dir;
}

std::string report_base(const std::string& csv_path) {
  std::string base = csv_path;
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".csv") == 0)
    base.resize(base.size() - 4);
  return base;
}

}  // namespace opbench

namespace opbench {

std::vector<NamedOutput> report_outputs(const std::string& flag, const std::string& base,
                                        const std::set<ReportFormat>& formats) {
  std::vector<NamedOutput> out;
  for (const auto& [format, ext] :
       {std::pair{ReportFormat::csv, ".csv"}, std::pair{ReportFormat::jsonl, ".jsonl"},
        std::pair{ReportFormat::prom, ".prom"}})
    if (formats.count(format)) out.push_back({flag, base + ext});
  return out;
}

}  // namespace opbench
