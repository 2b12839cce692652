#include "common/resume.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/report.hpp"
#include "common/text.hpp"

namespace opbench {

FinishedCases::FinishedCases(const std::string& csv_path) {
  std::error_code ec;
  if (!std::filesystem::exists(csv_path, ec)) return;
  auto rows = read_csv(csv_path);
  if (rows.empty()) return;
  header_ = rows.front();
  rows_.assign(rows.begin() + 1, rows.end());
}

namespace {

// A CSV cell back to the value type the binary wrote there.
Value cell_value(const std::string& cell, const Value& like) {
  if (cell.empty()) return Value{};
  char* end = nullptr;
  if (std::holds_alternative<std::int64_t>(like)) {
    const long long v = std::strtoll(cell.c_str(), &end, 10);
    if (*end == '\0') return Value{static_cast<std::int64_t>(v)};
  }
  if (std::holds_alternative<std::int64_t>(like) || std::holds_alternative<double>(like) ||
      std::holds_alternative<std::monostate>(like)) {
    const double v = std::strtod(cell.c_str(), &end);
    if (*end == '\0') return Value{v};
  }
  return Value{cell};
}

}  // namespace

std::vector<Record> FinishedCases::records(const Record& like) const {
  std::vector<Record> out;
  for (const auto& row : rows_) {
    Record r;
    for (const auto& f : like.fields()) {
      auto it = std::find(header_.begin(), header_.end(), f.name);
      const auto i = static_cast<std::size_t>(it - header_.begin());
      const std::string cell = it != header_.end() && i < row.size() ? row[i] : "";
      if (f.kind == FieldKind::arg)
        r.arg(f.name, cell_value(cell, f.value));
      else if (f.kind == FieldKind::metric)
        r.metric(f.name, cell_value(cell, f.value));
      else
        r.result(f.name, cell_value(cell, f.value));
    }
    out.push_back(std::move(r));
  }
  return out;
}

const std::vector<std::string>* FinishedCases::find(const Record& case_row) const {
  if (rows_.empty()) return nullptr;
  std::vector<std::string> key;
  for (const auto& f : case_row.fields())
    if (f.kind == FieldKind::arg) key.push_back(ascii_text(format_value(f.value)));
  if (key_columns_.empty()) {  // index the report by this binary's argument columns, once
    std::vector<std::size_t> index;
    for (const auto& f : case_row.fields()) {
      if (f.kind != FieldKind::arg) continue;
      auto it = std::find(header_.begin(), header_.end(), f.name);
      if (it == header_.end()) return nullptr;  // a report of another kind
      key_columns_.push_back(f.name);
      index.push_back(static_cast<std::size_t>(it - header_.begin()));
    }
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      std::vector<std::string> k;
      for (auto i : index)
        k.push_back(i < rows_[r].size() ? rows_[r][i] : "");
      keys_[std::move(k)] = r;  // a case written twice: its later row
    }
  }
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &rows_[it->second];
}

bool FinishedCases::contains(const Record& case_row) const {
  return find(case_row) != nullptr;
}

std::optional<Record> FinishedCases::earlier(const Record& case_row) const {
  const std::vector<std::string>* row = find(case_row);
  if (!row) return std::nullopt;
  Record r;
  for (const char* column : {"status", "note"}) {
    auto it = std::find(header_.begin(), header_.end(), column);
    const auto i = static_cast<std::size_t>(it - header_.begin());
    r.result(column, it != header_.end() && i < row->size() ? Value{(*row)[i]} : Value{});
  }
  return r;
}

}  // namespace opbench
