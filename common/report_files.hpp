#pragma once
// The files one group of rows goes to, in the formats the user chose (--format csv,jsonl,prom):
//   <base>.csv    the spreadsheet view (one row per case)
//   <base>.jsonl  the same rows with nested args, metrics, samples and the run id
//   <base>.prom   Prometheus text format for a textfile collector (common/prom_metrics.hpp:
//                 families in base units, labels that identify the case); rewritten atomically
//                 (write, then rename) after every row.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/owned_files.hpp"
#include "common/report.hpp"

namespace opbench {

enum class ReportFormat { csv, jsonl, prom };
// "csv,jsonl,prom"; unknown names are bad_input naming the flag.
std::set<ReportFormat> parse_report_formats(const std::string& text);

// Where a run's reports go: --report-dir-path, else the folder of --report-csv-path (`csv_path`),
// else reports/<binary>-<date>-<time>; the folder is created.
std::string resolve_report_dir(const std::string& report_dir, const std::string& csv_path,
                               const std::string& binary);
// The base path a report's .csv, .jsonl and .prom share: "DIR/x.csv" -> "DIR/x".
std::string report_base(const std::string& csv_path);
// The files a report at `base` writes in `formats`, as outputs named by `flag` (for the check
// that refuses a user's file there).
std::vector<NamedOutput> report_outputs(const std::string& flag, const std::string& base,
                                        const std::set<ReportFormat>& formats);

// Where a run writes each row as it comes (CaseLoop): one report's files, or a binary's set of
// them (bench_ccl's report per op, bench_fsdp's reports per collective).
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void write(const Record& row) = 0;
};

class ReportFiles : public RowSink {
 public:
  // `append`: continue the CSV and JSON lines of an earlier run (--resume). `csv_columns`, when
  // the caller knows them, put the CSV's header in at once; else it comes with the first row.
  // No file is created empty (common/report.hpp): the JSON lines and the .prom come with the
  // first row.
  ReportFiles(std::string base_path, std::set<ReportFormat> formats, nlohmann::json run,
              std::string prom_prefix, bool append = false,
              std::vector<std::string> csv_columns = {});
  void write(const Record& row) override;
  // A row the files already hold from the run being continued (--resume): not written again,
  // but counted and kept in the .prom, so every output covers the whole run.
  void carry(const Record& earlier_row);
  std::size_t rows() const { return rows_; }
  // "path (N rows)" for each file there is, for the closing lines.
  std::vector<std::string> listing() const;
  // The files there are (a run stopped before its first row has none but a CSV's header).
  std::vector<std::string> paths() const;

 private:
  std::string base_;
  std::set<ReportFormat> formats_;
  std::unique_ptr<CsvWriter> csv_;
  std::unique_ptr<JsonlWriter> jsonl_;
  std::string prom_prefix_;
  std::vector<Record> prom_rows_;
  nlohmann::json run_;  // the .prom's run_info labels
  std::size_t rows_ = 0;
  bool append_ = false;  // --resume: the files continue an earlier run's
};

}  // namespace opbench
