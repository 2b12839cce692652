#include "common/report.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"
#include "common/owned_files.hpp"
#include "common/text.hpp"

namespace fs = std::filesystem;

namespace opbench {
namespace {

// What a writer checks when it is made, before the run measures anything: the path is not a
// folder, its folder exists and is writable, and the path is this run's (claim_output). The file
// itself is created later, with what it holds first (open_claimed).
void claim_for_writing(const std::string& path, bool append) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw bad_input(fmt::format("{}: is a directory, expected a file path", path));
  auto parent = fs::path(path).parent_path();
  if (!parent.empty()) ensure_directory(parent.string());
  claim_output(path, append ? OutputUse::continued : OutputUse::fresh);
}

std::FILE* open_claimed(const std::string& path, bool append) {
  std::FILE* f = std::fopen(path.c_str(), append ? "a" : "w");
  if (!f) throw bad_input(fmt::format("{}: cannot be written: {}", path, std::strerror(errno)));
  return f;
}

void write_line(std::FILE* f, const std::string& line, const std::string& path) {
  if (std::fputs(line.c_str(), f) < 0 || std::fputc('\n', f) == EOF || std::fflush(f) != 0)
    throw run_failure(fmt::format("{}: write failed: {}", path, std::strerror(errno)));
}

bool is_number(const Value& v) {
  return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v);
}

}  // namespace

std::string csv_escape(const std::string& text) {
  const std::string field = ascii_text(text);
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(std::move(field));
      field.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || (!rows.back().empty())) rows.back().push_back(std::move(field));
  if (rows.back().empty()) rows.pop_back();
  if (text.empty()) rows.clear();
  return rows;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) throw bad_input(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  std::string text;
  char buffer[1 << 16];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;)
    text.append(buffer, n);
  std::fclose(f);
  return parse_csv(text);
}

CsvWriter::CsvWriter(std::string path, bool append, std::vector<std::string> columns)
    : path_(std::move(path)), append_(append) {
  // Refused before it is read when no opbench run wrote it.
  claim_for_writing(path_, append);
  std::error_code ec;
  if (append && fs::exists(path_, ec) && fs::file_size(path_, ec) > 0) {
    auto existing = read_csv(path_);
    columns_ = existing.front();
    rows_ = existing.size() - 1;
    file_ = open_claimed(path_, true);
  }
  if (columns.empty()) return;
  if (!file_)
    start(std::move(columns));
  else if (columns != columns_)
    throw columns_differ();
}

Error CsvWriter::columns_differ() const {
  return bad_input(
      fmt::format("{}: its columns differ from this run's (written by another version?); "
                  "cannot continue it",
                  path_));
}

void CsvWriter::start(std::vector<std::string> columns) {
  columns_ = std::move(columns);
  file_ = open_claimed(path_, append_);
  std::string header;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (i) header += ',';
    header += csv_escape(columns_[i]);
  }
  write_line(file_, header, path_);
}

CsvWriter::~CsvWriter() {
  if (file_) std::fclose(file_);
}

void CsvWriter::write(const Record& row) {
  auto names = row.names();
  if (!file_)
    start(std::move(names));
  else if (names != columns_)
    throw columns_differ();
  std::string line;
  for (std::size_t i = 0; i < row.fields().size(); ++i) {
    if (i) line += ',';
    line += csv_escape(format_value(row.fields()[i].value));
  }
  write_line(file_, line, path_);
  ++rows_;
}

nlohmann::json record_to_json(const Record& row) {
  nlohmann::json j = {{"args", nlohmann::json::object()}, {"metrics", nlohmann::json::object()}};
  for (const auto& f : row.fields()) {
    switch (f.kind) {
      case FieldKind::arg:
        j["args"][f.name] = value_to_json(f.value);
        break;
      case FieldKind::metric:
        j["metrics"][f.name] = value_to_json(f.value);
        break;
      case FieldKind::result:
        j[f.name] = value_to_json(f.value);
        break;
    }
  }
  for (const auto& [k, v] : row.extra().items())
    j[k] = v;
  return j;
}

JsonlWriter::JsonlWriter(std::string path, nlohmann::json run_metadata, bool append)
    : path_(std::move(path)), run_(std::move(run_metadata)), append_(append) {
  claim_for_writing(path_, append);
}

JsonlWriter::~JsonlWriter() {
  if (file_) std::fclose(file_);
}

void JsonlWriter::write(const Record& row) {
  auto j = record_to_json(row);
  j["run"] = run_;
  if (!file_) file_ = open_claimed(path_, append_);
  write_line(file_, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), path_);
}

ConsoleTable::ConsoleTable(std::vector<Column> columns, std::FILE* out)
    : columns_(std::move(columns)), out_(out) {
  for (auto& c : columns_)
    if (c.header.empty()) c.header = c.field;
}

void ConsoleTable::fit(const std::string& field, const std::vector<std::string>& values) {
  for (auto& c : columns_)
    if (c.field == field)
      for (const auto& v : values)
        c.width = std::max(c.width, static_cast<int>(v.size()));
}

void ConsoleTable::print_header() {
  std::string line, rule;
  for (const auto& c : columns_) {
    int w = std::max<int>(c.width, static_cast<int>(c.header.size()));
    line += fmt::format("{:<{}} ", c.header, w);
    rule += std::string(static_cast<std::size_t>(w), '-') + " ";
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  rule.pop_back();
  std::fprintf(out_, "%s\n%s\n", line.c_str(), rule.c_str());
  std::fflush(out_);
  header_printed_ = true;
}

void ConsoleTable::print(const Record& row) {
  if (!header_printed_) print_header();
  std::string line;
  for (const auto& c : columns_) {
    int w = std::max<int>(c.width, static_cast<int>(c.header.size()));
    const Value* v = row.find(c.field);
    std::string text = v ? format_for_people(*v) : "";
    if (c.field == "status" && is_noisy(row)) text = "noisy";  // an ok row to read with care
    line += v && is_number(*v) ? fmt::format("{:>{}} ", text, w) : fmt::format("{:<{}} ", text, w);
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void ensure_directory(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_directory(path, ec))
    throw bad_input(fmt::format("{}: exists and is not a directory", path));
  fs::create_directories(path, ec);
  if (ec) throw bad_input(fmt::format("{}: cannot create directory: {}", path, ec.message()));
  if (access(path.c_str(), W_OK) != 0)
    throw bad_input(fmt::format("{}: directory is not writable", path));
}

std::string file_safe(const std::string& label) {
  std::string out;
  for (char c : label) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '.' || c == '-' || c == '_')
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  return out.empty() ? "unnamed" : out;
}

}  // namespace opbench
