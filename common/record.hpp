#pragma once
// One result row: ordered named fields, each an argument of the case, a metric, or a result
// (status, note). The same Record feeds the CSV, the JSON lines and the console table.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace opbench {

enum class Status { ok, skipped, failed };
std::string_view status_name(Status s);

// Empty (unknown, e.g. pct_peak without a known peak), integer, real or text.
using Value = std::variant<std::monostate, std::int64_t, double, std::string>;

enum class FieldKind { arg, metric, result };

struct Field {
  std::string name;
  Value value;
  FieldKind kind;
};

class Record {
 public:
  Record& arg(std::string name, Value v) {
    return add(std::move(name), std::move(v), FieldKind::arg);
  }
  Record& metric(std::string name, Value v) {
    return add(std::move(name), std::move(v), FieldKind::metric);
  }
  Record& result(std::string name, Value v) {
    return add(std::move(name), std::move(v), FieldKind::result);
  }
  // Optional numbers become empty cells.
  Record& optional_metric(std::string name, std::optional<double> v);

  // Adds every field (and JSON extra) of `other` after this record's own.
  Record& append(const Record& other);

  const std::vector<Field>& fields() const { return fields_; }
  const Value* find(std::string_view name) const;
  // Field `name`'s value when the row has it and it holds a T (std::string, std::int64_t,
  // double); nullptr when it is absent, empty or of another type.
  template <typename T>
  const T* get(std::string_view name) const {
    const Value* v = find(name);
    return v ? std::get_if<T>(v) : nullptr;
  }
  std::vector<std::string> names() const;

  // JSON-only extras (every sample, per-rank lists, ...), nested under their own keys.
  nlohmann::json& extra() { return extra_; }
  const nlohmann::json& extra() const { return extra_; }

 private:
  Record& add(std::string name, Value v, FieldKind kind);
  std::vector<Field> fields_;
  nlohmann::json extra_ = nlohmann::json::object();
};

// An ok row whose mean stayed less certain than --max-noise asks (its note says "noisy (rse
// ..."): tables show its status as "noisy", summaries and comparisons count it apart.
bool is_noisy(const Record& row);

// Plain text of a value as it appears in a CSV cell or table: integers exactly, reals with up to
// 7 significant digits, nothing for empty.
std::string format_value(const Value& v);
// A count that must stay exact (FLOPs of a whole step): an integer when it fits in 64 bits, else
// its decimal digits as text, so no CSV ever shows 1.415578e+09 for 1415577600.
Value exact_count(__int128 count);
nlohmann::json value_to_json(const Value& v);
// For people (console tables, summaries): reals with one decimal from 100 up, two from 1 up,
// three significant digits below; the rest as format_value.
std::string format_for_people(const Value& v);

}  // namespace opbench
