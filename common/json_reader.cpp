#include "common/json_reader.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/error.hpp"

namespace fs = std::filesystem;

namespace opbench {
namespace {

// Line and column (1-based) of byte offset `pos` in `text`.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t pos) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::string executable_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

std::string shipped_config_or(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::exists(p, ec) || p.is_absolute()) return path;
  auto part = p.begin();
  if (part == p.end() || *part != "configs" || std::next(part) == p.end()) return path;
  fs::path rest;
  for (++part; part != p.end(); ++part)
    rest /= *part;
  try {
    return find_config_file(rest.string());
  } catch (const Error&) {
    return path;  // not shipped either: the error names the path as the user gave it
  }
}

nlohmann::json load_json_file(const std::string& given_path) {
  const std::string path = shipped_config_or(given_path);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw bad_input(fmt::format("{}: no such file", path));
  if (fs::is_directory(path, ec))
    throw bad_input(fmt::format("{}: is a directory, expected a JSON file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(fmt::format("{}: cannot be read", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& path) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw bad_input(fmt::format("{}: the file is empty, expected JSON", path));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    // nlohmann's text is "[json.exception.parse_error.101] parse error at line 1, column 2: <why>"
    auto colon = what.find(": ", what.find("parse error"));
    std::string why = colon == std::string::npos ? what : what.substr(colon + 2);
    throw bad_input(fmt::format("{}:{}:{}: JSON syntax error: {}", path, line, col, why));
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but still unreadable, e.g. a number too large for any type ("1e999",
    // found by fuzzing): "[json.exception.out_of_range.406] number overflow parsing '1e999'".
    std::string what = e.what();
    auto bracket = what.find("] ");
    throw bad_input(fmt::format("{}: JSON error: {}", path,
                                bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
}

const nlohmann::json& expect_entry_list(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_array())
    throw bad_input(fmt::format("{}: expected a list of entries at the top level, got {}", path,
                                describe_json(doc)));
  if (doc.empty()) throw bad_input(fmt::format("{}: the list of entries is empty", path));
  for (std::size_t i = 0; i < doc.size(); ++i)
    if (!doc[i].is_object())
      throw bad_input(
          fmt::format("{}: entry {}: expected an object, got {}", path, i, describe_json(doc[i])));
  return doc;
}

std::string describe_json(const nlohmann::json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "a boolean (" + text + ")";
    case nlohmann::json::value_t::string:
      return "a string (" + text + ")";
    case nlohmann::json::value_t::array:
      return "a list";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "the number " + text;
  }
}

std::string entry_where(const std::string& path, std::size_t index, const nlohmann::json& entry,
                        const std::string& name_key) {
  if (entry.is_object() && entry.contains(name_key) && entry[name_key].is_string())
    return fmt::format("{}: entry {} (\"{}\")", path, index, entry[name_key].get<std::string>());
  return fmt::format("{}: entry {}", path, index);
}

JsonEntry::JsonEntry(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {}

bool JsonEntry::has(const std::string& key) const {
  return object_.contains(key) && !object_[key].is_null();
}

void JsonEntry::fail(const std::string& key, const std::string& why) const {
  throw bad_input(fmt::format("{}: key '{}': {}", where_, key, why));
}

const nlohmann::json& JsonEntry::value(const std::string& key) {
  read_.insert(key);
  if (!object_.contains(key)) fail(key, "missing");
  return object_[key];
}

std::string JsonEntry::get_string(const std::string& key) {
  const auto& v = value(key);
  if (!v.is_string()) fail(key, "expected a string, got " + describe_json(v));
  auto s = v.get<std::string>();
  if (s.empty()) fail(key, "must not be empty");
  return s;
}

std::optional<std::string> JsonEntry::get_optional_string(const std::string& key) {
  read_.insert(key);
  if (!has(key)) return std::nullopt;
  return get_string(key);
}

std::int64_t JsonEntry::get_int(const std::string& key, std::int64_t min, std::int64_t max) {
  const auto& v = value(key);
  auto range = fmt::format("allowed range {}..{}", min, max);
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      fail(key, fmt::format("expected an integer, got {} ({})", describe_json(v), range));
    if (d < static_cast<double>(min) || d > static_cast<double>(max))
      fail(key, fmt::format("{} is out of range ({})", v.dump(), range));
    return static_cast<std::int64_t>(d);
  }
  if (!v.is_number_integer())
    fail(key, fmt::format("expected an integer, got {}", describe_json(v)));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    fail(key, fmt::format("{} is out of range ({})", v.dump(), range));
  std::int64_t i = v.get<std::int64_t>();
  if (i < min || i > max) fail(key, fmt::format("{} is out of range ({})", i, range));
  return i;
}

std::optional<std::int64_t> JsonEntry::get_optional_int(const std::string& key, std::int64_t min,
                                                        std::int64_t max) {
  read_.insert(key);
  if (!has(key)) return std::nullopt;
  return get_int(key, min, max);
}

bool JsonEntry::get_bool(const std::string& key) {
  const auto& v = value(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + describe_json(v));
  return v.get<bool>();
}

double JsonEntry::get_number_above(const std::string& key, double exclusive_min) {
  const auto& v = value(key);
  if (!v.is_number()) fail(key, "expected a number, got " + describe_json(v));
  double d = v.get<double>();
  if (!std::isfinite(d) || !(d > exclusive_min))
    fail(key, fmt::format("must be a number above {}, got {}", exclusive_min, v.dump()));
  return d;
}

const nlohmann::json& JsonEntry::get_array(const std::string& key) {
  const auto& v = value(key);
  if (!v.is_array() || v.empty()) fail(key, "expected a non-empty list, got " + describe_json(v));
  return v;
}

const nlohmann::json& JsonEntry::get_object(const std::string& key) {
  const auto& v = value(key);
  if (!v.is_object() || v.empty())
    fail(key, "expected a non-empty object, got " + describe_json(v));
  return v;
}

std::optional<bool> JsonEntry::get_optional_bool(const std::string& key) {
  read_.insert(key);
  if (!has(key)) return std::nullopt;
  return get_bool(key);
}

void JsonEntry::reject_unknown_keys() const {
  std::vector<std::string> unknown;
  for (const auto& [key, _] : object_.items())
    if (!read_.count(key) && !(key.size() > 0 && key[0] == '_')) unknown.push_back(key);
  if (unknown.empty()) return;
  std::string known;
  for (const auto& k : read_) {
    if (!known.empty()) known += ", ";
    known += k;
  }
  throw bad_input(fmt::format("{}: unknown key{} '{}' (known keys: {})", where_,
                              unknown.size() > 1 ? "s" : "", fmt::join(unknown, "', '"), known));
}

std::string find_config_file(const std::string& file_name) {
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("OPBENCH_CONFIG_DIR"))
    candidates.emplace_back(fs::path(dir) / file_name);
  std::string exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    candidates.emplace_back(fs::path(exe_dir) / ".." / "configs" / file_name);
    candidates.emplace_back(fs::path(exe_dir) / ".." / "share" / "opbench" / "configs" / file_name);
    candidates.emplace_back(fs::path(exe_dir) / ".." / ".." / "configs" / file_name);
  }
  candidates.emplace_back(fs::path(OPBENCH_SOURCE_DIR) / "configs" / file_name);
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
  throw bad_input(
      fmt::format("cannot find configs/{} (set OPBENCH_CONFIG_DIR or pass the path)", file_name));
}

}  // namespace opbench
