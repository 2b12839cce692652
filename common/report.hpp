#pragma once
// Writers for result rows. Every row is written and flushed as soon as its case finishes, so a
// run that stops early keeps everything it measured.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/record.hpp"

namespace opbench {

// RFC 4180 quoting: a field holding a comma, a quote, CR or LF is enclosed in quotes with inner
// quotes doubled; anything else is written as is, in plain ASCII (ascii_text).
std::string csv_escape(const std::string& field);

// Reads an RFC 4180 CSV file into rows of fields (the header is row 0); bad_input if unreadable.
std::vector<std::vector<std::string>> read_csv(const std::string& path);

class CsvWriter {
 public:
  // Creates (truncates) the file; throws bad_input when it cannot be written. With `append`, an
  // existing report is continued: its header fixes the columns and new rows go after its rows.
  explicit CsvWriter(std::string path, bool append = false);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // The first row fixes the columns; later rows must have the same field names.
  void write(const Record& row);
  const std::string& path() const { return path_; }
  std::size_t rows() const { return rows_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> columns_;
  std::size_t rows_ = 0;
};

// One JSON object per line: {"args": {...}, "metrics": {...}, "status": ..., "note": ..., extras,
// "run": {...}}.
class JsonlWriter {
 public:
  JsonlWriter(std::string path, nlohmann::json run_metadata, bool append = false);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  void write(const Record& row);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  nlohmann::json run_;
};

nlohmann::json record_to_json(const Record& row);

// An aligned table on stdout, printed row by row as cases finish. Each column has a minimum
// width; numbers are right-aligned, text left-aligned.
class ConsoleTable {
 public:
  struct Column {
    std::string field;   // Record field name
    std::string header;  // printed header (defaults to the field name)
    int width;
  };
  explicit ConsoleTable(std::vector<Column> columns, std::FILE* out = stdout);
  void print_header();
  void print(const Record& row);

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
