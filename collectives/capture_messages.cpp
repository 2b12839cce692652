#include "collectives/capture_messages.hpp"

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

struct Merged {
  std::int64_t calls = 0, timed = 0;
  double total_us = 0;
};

}  // namespace

std::vector<CapturedMessage> captured_messages(const std::string& dir, std::optional<int> rank,
                                               std::vector<std::string>* left_out) {
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

  using Key = std::tuple<std::string, std::string, std::string, std::int64_t, std::int64_t,
                         std::string>;  // api op dtype bytes comm_size redop
  std::map<Key, Merged> merged;
  std::vector<std::string> ranks_seen;
  static const char* const needed[] = {"rank",  "api",         "kind",      "op",
                                       "dtype", "bytes",       "comm_size", "redop",
                                       "calls", "timed_calls", "total_us"};
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
      if (rank && at("rank") != std::to_string(*rank)) continue;
      if (at("kind") != "collective" && at("kind") != "p2p") continue;
      Key key{at("api"),
              at("op"),
              at("dtype"),
              whole(at("bytes"), where + " bytes"),
              whole(at("comm_size"), where + " comm_size"),
              at("redop")};
      Merged& m = merged[key];
      m.calls += whole(at("calls"), where + " calls");
      m.timed += whole(at("timed_calls"), where + " timed_calls");
      m.total_us += number(at("total_us"), where + " total_us");
    }
  }
  if (rank &&
      std::find(ranks_seen.begin(), ranks_seen.end(), std::to_string(*rank)) == ranks_seen.end())
    throw bad_input(fmt::format("--rank {}: no capture file of that rank in {} (ranks: {})", *rank,
                                dir, fmt::join(ranks_seen, ", ")));

  std::vector<std::pair<double, CapturedMessage>> ordered;
  for (const auto& [key, m] : merged) {
    const auto& [api, op, dtype, bytes, comm_size, redop] = key;
    const std::string what = fmt::format("{} {} {} B", api, op, bytes);
    auto leave = [&](const std::string& why) {
      if (left_out) left_out->push_back(what + ": " + why);
    };
    CapturedMessage msg;
    msg.api = api;
    try {
      // bench_ccl's ops by the capture's names; send_recv is bench_ccl's ring
      const auto ops = parse_coll_ops(op);
      if (ops.size() != 1) throw bad_input(op);
      msg.op = ops.front();
      msg.dtype = parse_dtype(dtype);
      msg.redop = redop.empty() ? RedOp::sum : parse_red_op(redop);
    } catch (const Error&) {
      leave("not an operation bench_ccl runs (op, dtype and reduction must be bench_ccl's)");
      continue;
    }
    if (comm_size < 1 || bytes < 1) {
      leave("no bytes or no communicator size");
      continue;
    }
    msg.size_bytes = static_cast<std::uint64_t>(bytes);
    msg.comm_size = static_cast<int>(comm_size);
    msg.calls = m.calls;
    if (m.timed > 0) msg.in_job_us = m.total_us / static_cast<double>(m.timed);
    ordered.emplace_back(m.total_us, msg);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<CapturedMessage> out;
  for (auto& [total, msg] : ordered)
    out.push_back(std::move(msg));
  return out;
}

}  // namespace opbench
