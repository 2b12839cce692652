#pragma once
// Reading JSON input files so that every mistake names the file, the entry and the key:
//   error: configs/models.json: entry 3 ("llama3-70b"): key 'hidden_size': expected an integer, got
//   "8k"
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace opbench {

// Parses a JSON file; a missing file, a directory, or a syntax error (with line and column)
// throws bad_input naming the path.
nlohmann::json load_json_file(const std::string& path);
// Parses JSON text; `path` names it in errors (the file it came from).
nlohmann::json parse_json_text(const std::string& text, const std::string& path);

// The top-level list of entries of an input file ("a list of objects").
const nlohmann::json& expect_entry_list(const nlohmann::json& doc, const std::string& path);

// Reads the keys of one JSON object, remembering which were read so that the rest can be
// reported as unknown.
class JsonEntry {
 public:
  // `where` is e.g. `configs/models.json: entry 3 ("llama3-70b")`.
  JsonEntry(const nlohmann::json& object, std::string where);

  std::string where() const { return where_; }
  bool has(const std::string& key) const;

  std::string get_string(const std::string& key);
  std::optional<std::string> get_optional_string(const std::string& key);
  // An integer in [min, max]; a fractional, negative or out-of-range value is refused with the
  // range.
  std::int64_t get_int(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> get_optional_int(const std::string& key, std::int64_t min,
                                               std::int64_t max);
  bool get_bool(const std::string& key);
  // A finite number greater than `exclusive_min`.
  double get_number_above(const std::string& key, double exclusive_min);
  // The raw value of a nested list or object (marked as read); missing keys fail.
  const nlohmann::json& get_array(const std::string& key);
  const nlohmann::json& get_object(const std::string& key);
  std::optional<bool> get_optional_bool(const std::string& key);

  // Throws naming every key that no getter read. Keys starting with '_' are comments.
  void reject_unknown_keys() const;

  // bad_input for a value that is valid alone but not in combination: "<where>: key 'k': why".
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;

 private:
  const nlohmann::json& value(const std::string& key);
  const nlohmann::json& object_;
  std::string where_;
  std::set<std::string> read_;
};

// A short, human description of a JSON value's type and text for error messages.
std::string describe_json(const nlohmann::json& v);

// Where-prefix for entry i (0-based) of a file: `path: entry 3 ("name")`, using `name_key` if
// present.
std::string entry_where(const std::string& path, std::size_t index, const nlohmann::json& entry,
                        const std::string& name_key);

// Each entry of the file's top-level list (expect_entry_list), read through a JsonEntry whose
// errors name it as entry_where does with `name_key`: f(JsonEntry&) in the file's order.
template <class F>
void for_each_entry(const nlohmann::json& doc, const std::string& path, const std::string& name_key,
                    F&& f) {
  const auto& entries = expect_entry_list(doc, path);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    JsonEntry e(entries[i], entry_where(path, i, entries[i], name_key));
    f(e);
  }
}

// A path the user gave as configs/NAME that is not there from the current folder (an installed
// binary run outside the source tree) is the shipped configs/NAME (find_config_file); any other
// path is returned as it is.
std::string shipped_config_or(const std::string& path);

// Finds an opbench config file by name: $OPBENCH_CONFIG_DIR, then configs/ next to the binary
// (../configs, ../share/opbench/configs), then the source tree it was built from.
std::string find_config_file(const std::string& file_name);

}  // namespace opbench
