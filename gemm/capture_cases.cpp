#include "gemm/capture_cases.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "common/error.hpp"
#include "common/report.hpp"

namespace opbench {
namespace {

struct Merged {
  std::int64_t calls = 0, timed = 0;
  double total_us = 0;
};

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

}  // namespace

std::vector<GemmCase> capture_cases(const CaptureSelection& sel,
                                    std::vector<std::string>* left_out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(sel.dir, ec))
    throw bad_input(fmt::format("--capture-path {}: not a folder", sel.dir));
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(sel.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("capture-", 0) == 0 && entry.path().extension() == ".csv")
      paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    throw bad_input(fmt::format(
        "--capture-path {}: no capture-*.csv files (scripts/capture.sh --out writes them)",
        sel.dir));

  using Key = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::string>;  // api dtype m n k batch layout
  std::map<Key, Merged> merged;
  std::vector<std::string> ranks_seen;
  static const char* const needed[] = {"rank",   "api",   "kind",        "dtype",
                                       "m",      "n",     "k",           "batch",
                                       "layout", "calls", "timed_calls", "total_us"};
  for (const std::string& path : paths) {
    const auto rows = read_csv(path);
    if (rows.empty()) throw bad_input(fmt::format("{}: empty file", path));
    std::map<std::string, std::size_t> col;
    for (std::size_t i = 0; i < rows[0].size(); ++i)
      col[rows[0][i]] = i;
    for (const char* c : needed)
      if (!col.count(c))
        throw bad_input(fmt::format("{}: no column '{}': not a capture file", path, c));
    for (std::size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      auto at = [&](const char* c) -> std::string {
        const std::size_t i = col.at(c);
        return i < row.size() ? row[i] : std::string();
      };
      const std::string where = fmt::format("{} row {}", path, r);
      if (std::find(ranks_seen.begin(), ranks_seen.end(), at("rank")) == ranks_seen.end())
        ranks_seen.push_back(at("rank"));
      if (sel.rank && at("rank") != std::to_string(*sel.rank)) continue;
      if (at("kind") != "gemm") continue;
      Key key{at("api"),
              at("dtype"),
              whole(at("m"), where + " m"),
              whole(at("n"), where + " n"),
              whole(at("k"), where + " k"),
              whole(at("batch"), where + " batch"),
              at("layout")};
      Merged& m = merged[key];
      m.calls += whole(at("calls"), where + " calls");
      m.timed += whole(at("timed_calls"), where + " timed_calls");
      m.total_us += number(at("total_us"), where + " total_us");
    }
  }
  if (sel.rank && std::find(ranks_seen.begin(), ranks_seen.end(), std::to_string(*sel.rank)) ==
                      ranks_seen.end())
    throw bad_input(fmt::format("--rank {}: no capture file of that rank in {} (ranks: {})",
                                *sel.rank, sel.dir, fmt::join(ranks_seen, ", ")));

  std::vector<std::pair<double, GemmCase>> ordered;
  for (const auto& [key, m] : merged) {
    const auto& [api, dtype_text, mm, nn, kk, batch, layout] = key;
    DType dtype;
    try {
      dtype = parse_dtype(dtype_text);
    } catch (const Error&) {
      if (left_out)
        left_out->push_back(fmt::format("{} {}x{}x{} {}: dtype '{}' is not one bench_gemm knows",
                                        api, mm, nn, kk, layout, dtype_text));
      continue;
    }
    if (layout.size() != 2 || (layout[0] != 'N' && layout[0] != 'T') ||
        (layout[1] != 'N' && layout[1] != 'T'))
      throw bad_input(fmt::format("{}: {} {}x{}x{}: layout '{}' is not NN, NT, TN or TT", sel.dir,
                                  api, mm, nn, kk, layout));
    GemmCase c;
    c.report = "capture";
    c.model = "capture";
    c.gemm = api;
    c.problem.m = mm;
    c.problem.n = nn;
    c.problem.k = kk;
    c.problem.batch = std::max<std::int64_t>(1, batch);
    c.problem.transa = layout[0] == 'T';
    c.problem.transb = layout[1] == 'T';
    c.problem.dtype = dtype;
    c.problem.out_dtype = gemm_output_dtype(dtype);
    CapturedGemm cap;
    cap.api = api;
    cap.calls = m.calls;
    if (m.timed > 0) cap.in_job_us = m.total_us / static_cast<double>(m.timed);
    c.captured = cap;
    ordered.emplace_back(m.total_us, std::move(c));
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<GemmCase> cases;
  for (auto& [total, c] : ordered)
    cases.push_back(std::move(c));
  return cases;
}

}  // namespace opbench
