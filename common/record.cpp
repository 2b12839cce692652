#include "common/record.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "common/enum_names.hpp"

namespace opbench {

std::string_view status_name(Status s) {
  static constexpr EnumNames<Status, 3> kNames{
      {{Status::ok, "ok"}, {Status::skipped, "skipped"}, {Status::failed, "failed"}}};
  return enum_name(kNames, s, "failed");
}

Record& Record::add(std::string name, Value v, FieldKind kind) {
  fields_.push_back({std::move(name), std::move(v), kind});
  return *this;
}

Record& Record::optional_metric(std::string name, std::optional<double> v) {
  return v ? metric(std::move(name), Value{*v}) : metric(std::move(name), Value{});
}

Record& Record::append(const Record& other) {
  fields_.insert(fields_.end(), other.fields_.begin(), other.fields_.end());
  for (const auto& [k, v] : other.extra_.items())
    extra_[k] = v;
  return *this;
}

const Value* Record::find(std::string_view name) const {
  for (const auto& f : fields_)
    if (f.name == name) return &f.value;
  return nullptr;
}

std::vector<std::string> Record::names() const {
  std::vector<std::string> out;
  for (const auto& f : fields_)
    out.push_back(f.name);
  return out;
}

bool is_noisy(const Record& row) {
  const auto* s = row.get<std::string>("status");
  const auto* n = row.get<std::string>("note");
  return s && *s == "ok" && n && n->find("noisy (") != std::string::npos;
}

std::string format_value(const Value& v) {
  struct Visitor {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      if (!std::isfinite(d)) return "";
      return fmt::format("{:.7g}", d);
    }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visitor{}, v);
}

Value exact_count(__int128 count) {
  if (count >= std::numeric_limits<std::int64_t>::min() &&
      count <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(count);
  const bool negative = count < 0;
  unsigned __int128 rest =
      negative ? -static_cast<unsigned __int128>(count) : static_cast<unsigned __int128>(count);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(rest % 10)));
    rest /= 10;
  } while (rest);
  return (negative ? "-" : "") + digits;
}

std::string format_for_people(const Value& v) {
  const auto* d = std::get_if<double>(&v);
  if (!d || !std::isfinite(*d)) return format_value(v);
  double a = std::fabs(*d);
  if (a >= 100) return fmt::format("{:.1f}", *d);
  if (a >= 1 || a == 0) return fmt::format("{:.2f}", *d);
  return fmt::format("{:.3g}", *d);
}

nlohmann::json value_to_json(const Value& v) {
  struct Visitor {
    nlohmann::json operator()(std::monostate) const { return nullptr; }
    nlohmann::json operator()(std::int64_t i) const { return i; }
    nlohmann::json operator()(double d) const {
      return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(nullptr);
    }
    nlohmann::json operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace opbench
