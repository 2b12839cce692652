#include "common/capture_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/error.hpp"
#include "common/report.hpp"

namespace opbench {
namespace {

std::int64_t whole(const std::string& text, const std::string& where) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw bad_input(fmt::format("{}: expected a whole number >= 0, got '{}'", where, text));
}

double number(const std::string& text, const std::string& where) {
  if (text.empty()) return 0.0;
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw bad_input(fmt::format("{}: expected a number >= 0, got '{}'", where, text));
}

std::vector<std::string> capture_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw bad_input(fmt::format("--capture-path {}: not a folder", dir));
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("capture-", 0) == 0 && entry.path().extension() == ".csv")
      paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    throw bad_input(fmt::format(
        "--capture-path {}: no capture-*.csv files (scripts/capture.sh --out writes them)", dir));
  return paths;
}

}  // namespace

std::optional<double> CapturedShape::in_job_us() const {
  if (timed_calls <= 0) return std::nullopt;
  return total_us / static_cast<double>(timed_calls);
}

std::vector<CapturedShape> read_capture_shapes(const CaptureQuery& q) {
  std::vector<std::string> needed = {"rank", "kind", "calls", "timed_calls", "total_us"};
  needed.insert(needed.end(), q.key_columns.begin(), q.key_columns.end());
  std::map<std::vector<std::string>, CapturedShape> merged;
  std::vector<std::string> ranks_seen;
  for (const std::string& path : capture_files(q.dir)) {
    const auto rows = read_csv(path);
    if (rows.empty()) throw bad_input(fmt::format("{}: empty file", path));
    std::map<std::string, std::size_t> col;
    for (std::size_t i = 0; i < rows[0].size(); ++i)
      col[rows[0][i]] = i;
    for (const auto& c : needed)
      if (!col.count(c))
        throw bad_input(fmt::format("{}: no column '{}': not a capture file", path, c));
    for (std::size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      auto at = [&](const std::string& c) -> std::string {
        const std::size_t i = col.at(c);
        return i < row.size() ? row[i] : std::string();
      };
      const std::string where = fmt::format("{} row {}", path, r);
      if (std::find(ranks_seen.begin(), ranks_seen.end(), at("rank")) == ranks_seen.end())
        ranks_seen.push_back(at("rank"));
      if (q.rank && at("rank") != std::to_string(*q.rank)) continue;
      if (std::find(q.kinds.begin(), q.kinds.end(), at("kind")) == q.kinds.end()) continue;
      std::vector<std::string> key;
      for (const auto& c : q.key_columns) {
        key.push_back(at(c));
        if (std::find(q.whole_columns.begin(), q.whole_columns.end(), c) != q.whole_columns.end())
          whole(key.back(), where + " " + c);
      }
      CapturedShape& s = merged[key];
      s.key = key;
      s.calls += whole(at("calls"), where + " calls");
      const std::int64_t timed = whole(at("timed_calls"), where + " timed_calls");
      s.timed_calls += timed;
      s.total_us += number(at("total_us"), where + " total_us");
    }
  }
  if (q.rank &&
      std::find(ranks_seen.begin(), ranks_seen.end(), std::to_string(*q.rank)) == ranks_seen.end())
    throw bad_input(fmt::format("--rank {}: no capture file of that rank in {} (ranks: {})",
                                *q.rank, q.dir, fmt::join(ranks_seen, ", ")));
  std::vector<CapturedShape> out;
  for (auto& [key, shape] : merged)
    out.push_back(std::move(shape));
  std::stable_sort(out.begin(), out.end(), [](const CapturedShape& a, const CapturedShape& b) {
    return a.total_us > b.total_us;
  });
  return out;
}

}  // namespace opbench
