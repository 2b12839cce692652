#pragma once
// Writers for result rows. Every row is written and flushed as soon as its case finishes, so a
// run that stops early keeps everything it measured.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/record.hpp"

namespace opbench {

// RFC 4180 quoting: a field holding a comma, a quote, CR or LF is enclosed in quotes with inner
// quotes doubled; anything else is written as is, in plain ASCII (ascii_text).
std::string csv_escape(const std::string& field);

// Reads an RFC 4180 CSV file into rows of fields (the header is row 0); bad_input if unreadable.
std::vector<std::vector<std::string>> read_csv(const std::string& path);
// The same rows from CSV text already in memory (a converted trace's table).
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

// A report holds at least its header, or does not exist: a run interrupted in its first case
// leaves no 0-byte file that a spreadsheet or compare_reports.py cannot read. So a writer checks
// its path when it is made (bad_input when it is a folder, cannot be written, or holds a file no
// opbench run wrote) and creates the file with the first thing it holds.
class CsvWriter {
 public:
  // The file is created (truncated) with its header: at once when the `columns` are known,
  // else with the first row. With `append`, an existing report is continued: its header fixes
  // the columns (bad_input when `columns` differ) and new rows go after its rows.
  explicit CsvWriter(std::string path, bool append = false, std::vector<std::string> columns = {});
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // The first row fixes the columns, unless the constructor did; every row must have them.
  void write(const Record& row);
  const std::string& path() const { return path_; }
  std::size_t rows() const { return rows_; }
  bool created() const { return file_ != nullptr; }

 private:
  void start(std::vector<std::string> columns);  // creates the file with its header
  Error columns_differ() const;
  std::string path_;
  bool append_ = false;
  std::FILE* file_ = nullptr;
  std::vector<std::string> columns_;
  std::size_t rows_ = 0;
};

// One JSON object per line: {"args": {...}, "metrics": {...}, "status": ..., "note": ..., extras,
// "run": {...}}. Created with its first row (a JSON-lines file has no header): a run that
// writes none leaves none.
class JsonlWriter {
 public:
  JsonlWriter(std::string path, nlohmann::json run_metadata, bool append = false);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  void write(const Record& row);
  const std::string& path() const { return path_; }
  bool created() const { return file_ != nullptr; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  nlohmann::json run_;
  bool append_ = false;
};

nlohmann::json record_to_json(const Record& row);

// An aligned table on stdout, printed row by row as cases finish. Each column has a minimum
// width; numbers are right-aligned, text left-aligned.
// Where a run prints each row as it comes (CaseLoop): a ConsoleTable, or bench_ccl's
// nccl-tests-style table.
class RowTable {
 public:
  virtual ~RowTable() = default;
  virtual void print(const Record& row) = 0;
};

class ConsoleTable : public RowTable {
 public:
  struct Column {
    std::string field;   // Record field name
    std::string header;  // printed header (defaults to the field name)
    int width;
  };
  explicit ConsoleTable(std::vector<Column> columns, std::FILE* out = stdout);
  // Widens `field`'s column to its longest value, before the header is printed: a long shape
  // name (a shapes file's "llama3.1-70b_tp8_mlp_down_dgrad") would push every later column of
  // its row out of line.
  void fit(const std::string& field, const std::vector<std::string>& values);
  void print_header();
  void print(const Record& row) override;

 private:
  std::vector<Column> columns_;
  std::FILE* out_;
  bool header_printed_ = false;
};

// Creates a directory (and parents); a path that exists as a file or cannot be created is a
// bad_input error naming it.
void ensure_directory(const std::string& path);

// File-name-safe form of a label: "Llama-3.1 70B" -> "llama-3.1_70b".
std::string file_safe(const std::string& label);

}  // namespace opbench
