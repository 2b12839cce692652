#pragma once
// --resume: which cases a report already holds. A case is there when some row of the CSV has the
// same value in every argument column of the case's own row (status and figures aside), so a run
// that was stopped can be started again and only run what is missing.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/record.hpp"

namespace opbench {

class FinishedCases {
 public:
  FinishedCases() = default;
  explicit FinishedCases(const std::string& csv_path);  // no file yet: nothing finished
  bool contains(const Record& case_row) const;
  // The report's row of that case, as its status and note (nullopt: not in the report).
  std::optional<Record> earlier(const Record& case_row) const;
  std::size_t size() const { return rows_.size(); }
  // The report's rows as records shaped like `like` (a row of this binary: its names, kinds and
  // value types), so the continued run's summary, counts and .prom cover the whole run.
  std::vector<Record> records(const Record& like) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  mutable std::vector<std::string> key_columns_;
  mutable std::map<std::vector<std::string>, std::size_t> keys_;  // key -> row index
  const std::vector<std::string>* find(const Record& case_row) const;
};

}  // namespace opbench
