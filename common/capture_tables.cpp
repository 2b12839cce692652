#include "common/capture_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/capture_rows.hpp"
#include "common/error.hpp"
#include "common/job_time.hpp"
#include "common/rank_spacing.hpp"
#include "common/record.hpp"
#include "common/report.hpp"

namespace opbench {
namespace {

std::vector<std::string> capture_files(const std::string& flag, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw bad_input(fmt::format("{} {}: not a folder", flag, dir));
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("capture-", 0) == 0 && entry.path().extension() == ".csv")
      paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    throw bad_input(fmt::format(
        "{} {}: no capture-*.csv files (scripts/capture.sh --out writes them)", flag, dir));
  return paths;
}

// The rank stride of each NCCL communicator whose members' tables are all here, by comm_id: the
// capture writes the same comm_id in every member's table (capture/nccl_comms.hpp), and a table
// is one rank's (its `rank` cells). NCCL tells no process the others, so only the tables read
// together say that communicator 7f.. joined ranks 0, 8, 16 and 24: a stride of 8. A
// communicator with a member's table missing (a folder of some ranks' files, a process without
// a launcher's rank) or ranks not evenly spaced gets none. scripts/capture_summary.py keeps a
// copy (its strides_by_comm_id): change both, or neither.
std::map<std::string, std::string> strides_by_comm_id(
    const std::vector<std::vector<CaptureRow>>& tables) {
  struct Members {
    long long comm_size = 0;
    std::set<long long> ranks;
    bool complete = true;
  };
  std::map<std::string, Members> seen;
  for (const auto& rows : tables)
    for (const CaptureRow& row : rows) {
      const auto id = row.find("comm_id");
      const std::string& kind = row.at("kind");
      if (id == row.end() || id->second.empty() || (kind != "collective" && kind != "p2p"))
        continue;  // (only these rows' comm_size is a number the rules checked)
      Members& m = seen[id->second];
      m.comm_size = std::stoll(row.at("comm_size"));  // whole, as the rules checked
      const std::string& rank = row.at("rank");
      if (rank.empty())
        m.complete = false;
      else
        m.ranks.insert(std::stoll(rank));
    }
  std::map<std::string, std::string> out;
  for (const auto& [id, m] : seen) {
    if (!m.complete || static_cast<long long>(m.ranks.size()) != m.comm_size) continue;
    if (const long long stride = even_spacing(m.ranks.begin(), m.ranks.end()); stride > 0)
      out[id] = std::to_string(stride);
  }
  return out;
}

}  // namespace

void print_source_notes(const ShapeSource& source) {
  for (const std::string& note : source.notes)
    fmt::print(stderr, "note: {} {}\n", source.flag, note);
}

void add_in_job_columns(Record& row, const CapturedCall& job, std::optional<double> measured_us) {
  row.metric("captured_calls", job.calls);
  row.optional_metric("in_job_us", job.in_job_us);
  row.optional_metric("in_job_ratio",
                      job.as_job_ran && job.in_job_us && measured_us && *measured_us > 0
                          ? std::optional<double>(*job.in_job_us / *measured_us)
                          : std::nullopt);
}

std::optional<double> CapturedShape::in_job_us() const {
  if (timed_calls <= 0) return std::nullopt;
  return total_us / static_cast<double>(timed_calls);
}

std::vector<CapturedShape> read_capture_shapes(const CaptureQuery& q) {
  std::map<std::vector<std::string>, CapturedShape> merged;
  std::vector<std::string> ranks_seen;
  // Every row of every table obeys the capture's rules, whatever this query keeps: a broken file
  // is refused whole (common/capture_rows.hpp).
  std::vector<std::vector<CaptureRow>> tables;
  if (!q.source.tables.empty()) {
    for (const auto& [name, text] : q.source.tables)
      tables.push_back(check_capture_table(name, parse_csv(text)));
  } else {
    for (const std::string& path : capture_files(q.source.flag, q.source.path))
      tables.push_back(read_capture_file(path));
  }
  // (only where the query keys by it: bench_gemm's does not)
  const bool by_stride =
      std::find(q.key_columns.begin(), q.key_columns.end(), "comm_stride") != q.key_columns.end();
  const std::map<std::string, std::string> member_strides =
      by_stride ? strides_by_comm_id(tables) : std::map<std::string, std::string>{};
  for (const std::vector<CaptureRow>& rows : tables) {
    std::set<std::vector<std::string>> in_this_table;  // keys counted in `tables` already
    for (const CaptureRow& row : rows) {
      const std::string& rank = row.at("rank");
      if (std::find(ranks_seen.begin(), ranks_seen.end(), rank) == ranks_seen.end())
        ranks_seen.push_back(rank);
      if (q.rank && rank != std::to_string(*q.rank)) continue;
      if (std::find(q.kinds.begin(), q.kinds.end(), row.at("kind")) == q.kinds.end()) continue;
      std::vector<std::string> key;  // a column older files lack (placement) reads as empty
      for (const auto& c : q.key_columns) {
        key.push_back(row.count(c) ? row.at(c) : std::string());
        if (c == "comm_stride" && key.back().empty() && row.count("comm_id")) {
          const auto found = member_strides.find(row.at("comm_id"));
          if (found != member_strides.end()) key.back() = found->second;
        }
      }
      CapturedShape& s = merged[key];
      if (in_this_table.insert(key).second) ++s.tables;
      s.key = key;
      s.calls += std::stoll(row.at("calls"));
      s.timed_calls += std::stoll(row.at("timed_calls"));
      if (row.at("total_us").empty()) continue;  // no call timed
      const double total = std::stod(row.at("total_us"));
      // the rules (capture_rows.hpp) allow sampled-out calls only beside timed ones
      const std::int64_t timed = std::stoll(row.at("timed_calls"));
      const std::int64_t skipped =
          row.count("not_sampled_calls") ? std::stoll(row.at("not_sampled_calls")) : 0;
      s.total_us += total;
      s.job_us += job_time_us(total, static_cast<std::uint64_t>(timed),
                              static_cast<std::uint64_t>(skipped));
    }
  }
  if (q.rank && std::find(ranks_seen.begin(), ranks_seen.end(), std::to_string(*q.rank)) ==
                    ranks_seen.end()) {
    ranks_seen.erase(std::remove(ranks_seen.begin(), ranks_seen.end(), ""), ranks_seen.end());
    if (ranks_seen.empty())
      throw bad_input(fmt::format(
          "--rank {}: the tables of {} {} name no rank (a process without a launcher's rank "
          "variable writes pid-named files): leave --rank out",
          *q.rank, q.source.flag, q.source.path));
    throw bad_input(fmt::format("--rank {}: no table of that rank in {} {} (ranks: {})", *q.rank,
                                q.source.flag, q.source.path, fmt::join(ranks_seen, ", ")));
  }
  std::vector<CapturedShape> out;
  for (auto& [key, shape] : merged)
    out.push_back(std::move(shape));
  std::stable_sort(out.begin(), out.end(), [](const CapturedShape& a, const CapturedShape& b) {
    return a.job_us > b.job_us;
  });
  return out;
}

}  // namespace opbench
