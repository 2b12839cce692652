#include "common/capture_rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/report.hpp"

namespace opbench {
namespace {

// The columns the capture library writes (capture/output.cpp csv_header), all of them required.
constexpr std::array<std::string_view, 26> kColumns{
    "host",   "rank",      "pid",    "api",    "kind",        "op",       "dtype",
    "m",      "n",         "k",      "batch",  "layout",      "flops",    "bytes",
    "count",  "comm_size", "redop",  "calls",  "timed_calls", "total_us", "avg_us",
    "min_us", "p50_us",    "p99_us", "max_us", "note"};
constexpr std::array<std::string_view, 6> kTimes{"total_us", "avg_us", "min_us",
                                                 "p50_us",   "p99_us", "max_us"};

// A cell as a message shows it: printable ASCII, '?' for every other byte (a garbled line holds
// anything), at most 40 characters.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? c : '?';
  }
  return text.size() > 40 ? out + "..." : out;
}

bool all_of_chars(std::string_view text, bool (*ok)(char)) {
  if (text.empty()) return false;
  for (char c : text)
    if (!ok(c)) return false;
  return true;
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}
bool hex_digit(char c) {
  return digit(c) || (c >= 'a' && c <= 'f');
}
bool name_char(char c) {
  return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool text_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u != 0x7f;
}

// `source` (absent from files written before it): the capture library's, or a converted trace's
// (trace/), whose names are PyTorch's operators and whose kinds include what nothing replays.
constexpr std::array<std::string_view, 4> kSources{"capture", "trace:gpu", "trace:cpu", "trace:et"};
constexpr std::array<std::string_view, 4> kUnreplayedKinds{"memory_bound", "other", "idle", ""};
constexpr std::array<std::string_view, 7> kAttentionShape{
    "batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v"};

// Plain decimal notation only, as the library writes it ("12.500"; an exponent is allowed): no
// sign, no inf or nan, no hexadecimal, no spaces, so that Python's float() and strtod agree.
bool decimal_syntax(std::string_view t) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < t.size() && digit(t[i]))
      ++i;
    return i > from;
  };
  if (!digits()) return false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// nccl-tests' bytes of the row's count (common/coll_formulas.hpp, the arithmetic the capture
// library writes `bytes` with): count x element size, times the ranks for the ops whose count is
// one rank's share. Not checked where the count alone does not give the bytes: a dtype opbench
// does not know (MPI's `other` and `none`, `int16`, ...), an op without a count (`barrier`, a
// mixed NCCL `group`), MPI_Reduce_scatter (bytes from every rank's count), ncclGroupEnd (the
// group's operations summed, each with its own type).
struct BytesRule {
  std::size_t element = 0;
  std::int64_t ranks = 1;  // the count's multiple besides the element size
};

std::optional<BytesRule> bytes_rule(const std::string& api, const std::string& op,
                                    const std::string& dtype, std::int64_t comm_size) {
  if (api == "MPI_Reduce_scatter" || api == "ncclGroupEnd") return std::nullopt;
  std::optional<std::size_t> element;
  for (DType t : {DType::fp64, DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3,
                  DType::fp8_e5m2, DType::int8, DType::uint8, DType::int32, DType::int64,
                  DType::uint32, DType::uint64})
    if (dtype_name(t) == dtype) element = dtype_size(t);
  if (!element) return std::nullopt;
  // MPI_Alltoallv's count is everything the rank sends, over all peers.
  if ((op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") &&
      api != "MPI_Alltoallv")
    return BytesRule{*element, comm_size};
  if (op == "all_reduce" || op == "broadcast" || op == "reduce" || op == "all_to_all" ||
      op == "send" || op == "recv" || op == "send_recv")
    return BytesRule{*element, 1};
  return std::nullopt;
}

class RowRules {
 public:
  RowRules(const CaptureRow& row, std::string where) : row_(row), where_(std::move(where)) {}

  [[noreturn]] void fail(std::string_view column, const std::string& what) const {
    throw bad_input(fmt::format("{} {}: {}", where_, column, what));
  }
  // Only the 26 columns every capture file has are checked up front; a trace's attention columns
  // are needed only by an attention row, so a file without them fails at that row.
  const std::string& cell(std::string_view column) const {
    const auto it = row_.find(std::string(column));
    if (it == row_.end()) fail(column, "missing (the header has no such column)");
    return it->second;
  }

  std::int64_t whole(std::string_view column) const {
    const std::string& t = cell(column);
    // 19 digits may still exceed int64: compared as text against its largest value
    if (all_of_chars(t, digit) && (t.size() < 19 || (t.size() == 19 && t <= "9223372036854775807")))
      return std::strtoll(t.c_str(), nullptr, 10);
    fail(column, fmt::format("expected a whole number >= 0, got '{}'", shown(t)));
  }
  void name(std::string_view column) const {
    const std::string& t = cell(column);
    if (!all_of_chars(t, name_char))
      fail(column, fmt::format("expected a name (letters, digits and _), got '{}'", shown(t)));
  }
  void text(std::string_view column) const {
    const std::string& t = cell(column);
    if (!all_of_chars(t, text_char))
      fail(column, fmt::format("expected text without control characters, got '{}'", shown(t)));
  }
  bool has(std::string_view column) const { return row_.count(std::string(column)) > 0; }
  // Empty: no call was timed.
  std::optional<double> time_us(std::string_view column) const {
    const std::string& t = cell(column);
    if (t.empty()) return std::nullopt;
    const double v = decimal_syntax(t) ? std::strtod(t.c_str(), nullptr) : -1;
    if (!(v >= 0 && std::isfinite(v)))
      fail(column, fmt::format("expected a finite number >= 0, got '{}'", shown(t)));
    return v;
  }

 private:
  const CaptureRow& row_;
  std::string where_;
};

void check_row(const CaptureRow& row, const std::string& where) {
  const RowRules r(row, where);
  if (!r.cell("rank").empty()) r.whole("rank");
  r.whole("pid");
  const std::string source = r.has("source") ? r.cell("source") : "capture";
  if (std::find(kSources.begin(), kSources.end(), source) == kSources.end())
    r.fail("source",
           fmt::format("'{}' is not capture, trace:gpu, trace:cpu or trace:et", shown(source)));
  const bool traced = source != "capture";
  if (traced)
    r.text("api");
  else
    r.name("api");
  const std::string& kind = r.cell("kind");
  const bool unreplayed = traced && std::find(kUnreplayedKinds.begin(), kUnreplayedKinds.end(),
                                              kind) != kUnreplayedKinds.end();
  if (kind != "gemm" && kind != "collective" && kind != "p2p" && !(traced && kind == "attention") &&
      !unreplayed)
    r.fail("kind", traced ? fmt::format("'{}' is not gemm, attention, collective, p2p, "
                                        "memory_bound, other or idle",
                                        shown(kind))
                          : fmt::format("'{}' is not gemm, collective or p2p", shown(kind)));
  if (!unreplayed) {
    r.name("op");
    r.name("dtype");
  }
  std::int64_t bytes = 0, count = 0, comm_size = 0;
  if (unreplayed) {
  } else if (kind == "attention") {
    for (std::string_view c : kAttentionShape)
      r.whole(c);
    if (r.cell("causal") != "true" && r.cell("causal") != "false")
      r.fail("causal", fmt::format("'{}' is not true or false", shown(r.cell("causal"))));
  } else if (kind == "gemm") {
    for (std::string_view c : {"m", "n", "k", "batch"})
      r.whole(c);
    const std::string& layout = r.cell("layout");
    if (layout != "NN" && layout != "NT" && layout != "TN" && layout != "TT")
      r.fail("layout", fmt::format("'{}' is not NN, NT, TN or TT", shown(layout)));
  } else {
    bytes = r.whole("bytes");
    count = r.whole("count");
    comm_size = r.whole("comm_size");
    // comm_stride (absent from files written before it): empty where the source cannot tell
    if (r.has("comm_stride") && !r.cell("comm_stride").empty() && r.whole("comm_stride") == 0)
      r.fail("comm_stride", "0, but a stride is at least 1 (empty where it is not known)");
    if (r.has("comm_id") && !r.cell("comm_id").empty() &&
        (r.cell("comm_id").size() != 16 || !all_of_chars(r.cell("comm_id"), hex_digit)))
      r.fail("comm_id",
             fmt::format("expected 16 hex digits (or empty), got '{}'", shown(r.cell("comm_id"))));
    if (!r.cell("redop").empty()) r.name("redop");
    if (r.has("placement")) {
      const std::string& p = r.cell("placement");
      if (!p.empty() && p != "in_place" && p != "out_of_place")
        r.fail("placement", fmt::format("'{}' is not in_place or out_of_place", shown(p)));
    }
  }
  const std::int64_t calls = r.whole("calls"), timed = r.whole("timed_calls");
  for (std::string_view c : kTimes)
    r.time_us(c);
  if (timed > calls) r.fail("timed_calls", fmt::format("{} exceeds calls ({})", timed, calls));
  if (timed > 0 && r.cell("total_us").empty())
    r.fail("total_us", fmt::format("empty, but timed_calls is {}", timed));
  std::int64_t graph = 0;
  if (r.has("graph_capture_calls")) {
    graph = r.whole("graph_capture_calls");
    if (graph > calls - timed)
      r.fail("graph_capture_calls",
             fmt::format("{} exceeds the untimed calls ({})", graph, calls - timed));
  }
  if (r.has("not_sampled_calls")) {
    const std::int64_t skipped = r.whole("not_sampled_calls");
    if (skipped > calls - timed - graph)
      r.fail("not_sampled_calls",
             fmt::format("{} exceeds the untimed calls less those in graph captures ({})", skipped,
                         calls - timed - graph));
    if (skipped > 0 && timed == 0)
      r.fail("not_sampled_calls", fmt::format("{}, but no call was timed", skipped));
  }
  if (kind != "collective" && kind != "p2p") return;
  const std::string &api = r.cell("api"), &op = r.cell("op"), &dtype = r.cell("dtype");
  const auto rule = bytes_rule(api, op, dtype, comm_size);
  if (!rule) return;
  const __int128 expected =
      static_cast<__int128>(count) * static_cast<__int128>(rule->element) * rule->ranks;
  if (expected == bytes) return;
  const std::string ranks = rule->ranks == 1 ? "" : fmt::format(" on {} ranks", rule->ranks);
  r.fail("bytes", fmt::format("{}, but count {} of {} ({} B each){} makes {} for {}", bytes, count,
                              dtype, rule->element, ranks, expected, api));
}

}  // namespace

std::vector<CaptureRow> check_capture_table(const std::string& path,
                                            const std::vector<std::vector<std::string>>& table) {
  if (table.empty()) throw bad_input(fmt::format("{}: empty file", path));
  const std::vector<std::string>& header = table.front();
  for (std::string_view c : kColumns)
    if (std::find(header.begin(), header.end(), c) == header.end())
      throw bad_input(fmt::format("{}: no column '{}': not a capture file", path, c));
  std::vector<CaptureRow> rows;
  for (std::size_t r = 1; r < table.size(); ++r) {
    const std::vector<std::string>& cells = table[r];
    const std::string where = fmt::format("{} row {}", path, r);
    if (cells.size() < header.size())
      throw bad_input(fmt::format(
          "{} {}: missing (the row has {} of the header's {} fields: a truncated or garbled line)",
          where, header[cells.size()], cells.size(), header.size()));
    if (cells.size() > header.size())
      throw bad_input(fmt::format("{}: {} fields, but the header has {} (a garbled line)", where,
                                  cells.size(), header.size()));
    CaptureRow row;
    for (std::size_t i = 0; i < header.size(); ++i)
      row.emplace(header[i], cells[i]);
    check_row(row, where);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<CaptureRow> read_capture_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw bad_input(fmt::format("{}: a folder, not a capture file", path));
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw bad_input(fmt::format("{}: not a regular file, not a capture file", path));
  return check_capture_table(path, read_csv(path));
}

}  // namespace opbench
