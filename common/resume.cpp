#include "common/resume.hpp"

#include <algorithm>
#include <filesystem>

#include "common/report.hpp"

namespace opbench {

FinishedCases::FinishedCases(const std::string& csv_path) {
  std::error_code ec;
  if (!std::filesystem::exists(csv_path, ec)) return;
  auto rows = read_csv(csv_path);
  if (rows.empty()) return;
  header_ = rows.front();
  rows_.assign(rows.begin() + 1, rows.end());
}

bool FinishedCases::contains(const Record& case_row) const {
  if (rows_.empty()) return false;
  std::vector<std::string> key;
  for (const auto& f : case_row.fields())
    if (f.kind == FieldKind::arg) key.push_back(format_value(f.value));
  if (key_columns_.empty()) {  // index the report by this binary's argument columns, once
    std::vector<std::size_t> index;
    for (const auto& f : case_row.fields()) {
      if (f.kind != FieldKind::arg) continue;
      auto it = std::find(header_.begin(), header_.end(), f.name);
      if (it == header_.end()) return false;  // a report of another kind
      key_columns_.push_back(f.name);
      index.push_back(static_cast<std::size_t>(it - header_.begin()));
    }
    for (const auto& row : rows_) {
      std::vector<std::string> k;
      for (auto i : index)
        k.push_back(i < row.size() ? row[i] : "");
      keys_.insert(std::move(k));
    }
  }
  return keys_.count(key) > 0;
}

}  // namespace opbench
