// ReportTimes: the times of a step's operators, read from the CSV reports of bench_gemm,
// bench_attention, bench_memops, bench_ccl and bench_fsdp (docs/outputs.md has their columns).
//
// Every ok row is indexed under a key made of the arguments that decide its time; an operator
// looks itself up under the key built the same way from its own arguments. Both sides go through
// the same key functions, so a row and an operator match exactly when those arguments are equal.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "common/error.hpp"
#include "common/report.hpp"
#include "common/text.hpp"
#include "step/operator_times.hpp"

namespace opbench {
namespace {

namespace fs = std::filesystem;

// ---- keys -----------------------------------------------------------------------------------
// Text columns hold names as the binaries write them; a dtype goes through parse_dtype so that an
// alias in a hand-edited report (bfloat16, float) still matches. An unknown dtype stays as written
// and matches nothing.
std::string dtype_text(std::string_view cell) {
  try {
    return std::string(dtype_name(parse_dtype(cell)));
  } catch (const Error&) {
    return std::string(trim(cell));
  }
}

struct GemmKey {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string transa, transb, dtype;  // "N"/"T", dtype_name
};

std::string gemm_key(const GemmKey& g) {
  return fmt::format("gemm m{} n{} k{} b{} {}{} {}", g.m, g.n, g.k, g.batch, g.transa, g.transb,
                     g.dtype);
}

GemmKey gemm_key_of(const GemmProblem& p) {
  return {p.m,
          p.n,
          p.k,
          p.batch,
          p.transa ? "T" : "N",
          p.transb ? "T" : "N",
          std::string(dtype_name(p.dtype))};
}

// An expert row times the rank's experts in one call: the padded problem fixes the shape, the
// token figures say how the tokens spread over the experts, `impl` how the call ran them.
std::string experts_key(const std::string& impl, const GemmKey& padded, std::int64_t tokens_min,
                        std::int64_t tokens_max, std::int64_t tokens_total) {
  return fmt::format("experts {} {} tokens {}..{} total {}", impl, gemm_key(padded), tokens_min,
                     tokens_max, tokens_total);
}

struct AttentionKey {
  std::int64_t batch = 0, seqlen_q = 0, seqlen_kv = 0, heads_q = 0, heads_kv = 0, dim_qk = 0,
               dim_v = 0;
  std::string causal, dtype, pass;  // "true"/"false", dtype_name, "fwd"/"bwd"
};

std::string attention_key(const AttentionKey& a) {
  return fmt::format("attention {} b{} s{}/{} h{}/{} d{}/{} causal={} {}", a.pass, a.batch,
                     a.seqlen_q, a.seqlen_kv, a.heads_q, a.heads_kv, a.dim_qk, a.dim_v, a.causal,
                     a.dtype);
}

struct MemopKey {
  std::string op, pass, dtype;  // memop_name, mem_pass_name, dtype_name
  std::int64_t rows = 0, cols = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
};

// The head counts decide rope's work and the vocabulary the embedding's; the other operators
// leave those cells empty, so they are not part of their keys.
std::string memop_key(const MemopKey& c) {
  std::string key = fmt::format("memop {} {} {}x{} {}", c.op, c.pass, c.rows, c.cols, c.dtype);
  if (c.op == memop_name(MemOp::rope))
    key += fmt::format(" h{}/{} d{}", c.heads, c.kv_heads, c.head_dim);
  if (c.op == memop_name(MemOp::embedding)) key += fmt::format(" vocab {}", c.vocab);
  return key;
}

// Collectives are keyed without their size: the sizes of one op, group and dtype form a sweep
// that a size between two of its points is interpolated from.
std::string collective_key(const std::string& op, std::int64_t group_size,
                           const std::string& dtype) {
  return fmt::format("{} over {} ranks {}", op, group_size, dtype);
}

// ---- reading rows ---------------------------------------------------------------------------

// One data row of a report, its cells read by column name. Numbers that cannot be read are a
// bad_input naming the file, the line and the column: a report that is wrong should not turn
// silently into a missing time.
class Row {
 public:
  Row(const std::string& file, const std::unordered_map<std::string, std::size_t>& columns,
      const std::vector<std::string>& cells, std::size_t line)
      : file_(file), columns_(columns), cells_(cells), line_(line) {}

  bool has(const std::string& column) const { return columns_.count(column) > 0; }

  // The cell, trimmed; empty when the column is absent or the row is short.
  std::string_view text(const std::string& column) const {
    auto it = columns_.find(column);
    if (it == columns_.end() || it->second >= cells_.size()) return {};
    return trim(cells_[it->second]);
  }

  // An integer cell; `fallback` when empty or absent. Integers are written exactly, but a real
  // with an integral value ("8192.0", "1e+06") is read too.
  std::int64_t integer(const std::string& column, std::int64_t fallback = 0) const {
    const std::string_view cell = text(column);
    if (cell.empty()) return fallback;
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (ec == std::errc() && end == cell.data() + cell.size()) return v;
    const std::optional<double> d = parse_real(cell);
    if (d && std::nearbyint(*d) == *d && std::abs(*d) < 9.2e18)
      return static_cast<std::int64_t>(*d);
    throw malformed(column, cell, "an integer");
  }

  // A real cell; nullopt when empty or absent.
  std::optional<double> real(const std::string& column) const {
    const std::string_view cell = text(column);
    if (cell.empty()) return std::nullopt;
    const std::optional<double> v = parse_real(cell);
    if (!v || !std::isfinite(*v)) throw malformed(column, cell, "a number");
    return v;
  }

  // "DIR/gemm_step.csv line 12"
  std::string where() const { return fmt::format("{} line {}", file_, line_); }

  Error malformed(const std::string& column, std::string_view cell, std::string_view what) const {
    return bad_input(fmt::format("{}, column {}: '{}' is not {}", where(), column, cell, what));
  }

 private:
  static std::optional<double> parse_real(std::string_view cell) {
    // from_chars reads the same text in every locale (strtod would take a ',' in some).
    double v = 0;
    auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (ec != std::errc() || end != cell.data() + cell.size()) return std::nullopt;
    return v;
  }

  const std::string& file_;
  const std::unordered_map<std::string, std::size_t>& columns_;
  const std::vector<std::string>& cells_;
  std::size_t line_;
};

// Which binary wrote a CSV, told by its header. Each family needs time_us besides its own
// argument columns, which keeps out bench_attention's attention_engines.csv (the cases without
// times), bench_fsdp's plan CSV (`collective`, not `op`) and bench_step's own step.csv and
// step_operators.csv.
enum class ReportKind { none, gemm, attention, memops, collective };

ReportKind classify(const std::vector<std::string>& header) {
  auto has = [&](std::initializer_list<std::string_view> columns) {
    return std::all_of(columns.begin(), columns.end(), [&](std::string_view c) {
      return std::find(header.begin(), header.end(), c) != header.end();
    });
  };
  if (!has({"time_us", "status"})) return ReportKind::none;
  if (has({"m", "n", "k", "transa", "transb"})) return ReportKind::gemm;
  if (has({"seqlen_q", "seqlen_kv", "num_head_q"})) return ReportKind::attention;
  if (has({"op", "rows", "cols"})) return ReportKind::memops;
  if (has({"op", "size_bytes", "group_size"})) return ReportKind::collective;
  return ReportKind::none;
}

GemmKey gemm_key_of(const Row& r) {
  return {r.integer("m"),
          r.integer("n"),
          r.integer("k"),
          r.integer("batch", 1),
          std::string(r.text("transa")),
          std::string(r.text("transb")),
          dtype_text(r.text("dtype"))};
}

AttentionKey attention_key_of(const Row& r) {
  return {r.integer("batch_size", 1), r.integer("seqlen_q"),      r.integer("seqlen_kv"),
          r.integer("num_head_q"),    r.integer("num_head_kv"),   r.integer("head_dim_qk"),
          r.integer("head_dim_v"),    to_lower(r.text("causal")), dtype_text(r.text("dtype")),
          std::string(r.text("pass"))};
}

MemopKey memop_key_of(const Row& r) {
  return {std::string(r.text("op")), std::string(r.text("pass")), dtype_text(r.text("dtype")),
          r.integer("rows"),         r.integer("cols"),           r.integer("heads"),
          r.integer("kv_heads"),     r.integer("head_dim"),       r.integer("vocab")};
}

// The physical line of each row (1 = the header): a quoted note may span lines, which read_csv
// keeps inside the field, so the newlines of earlier fields are counted.
std::vector<std::size_t> line_numbers(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> lines;
  std::size_t line = 1;
  for (const auto& row : rows) {
    lines.push_back(line);
    line += 1;
    for (const auto& field : row)
      line += static_cast<std::size_t>(std::count(field.begin(), field.end(), '\n'));
  }
  return lines;
}

// bench_ccl measures each size out of place and in place; nccl-tests' headline, and what a
// framework's collectives mostly are, is out of place.
int placement_preference(std::string_view placement) {
  return placement == "in_place" ? 0 : 1;
}

}  // namespace

// ---- the index ------------------------------------------------------------------------------

struct ReportTimes::Impl {
  // One collective row at one size, with what decides between rows of the same size: the later
  // folder, then the preferred placement, then (equal in both) the later row.
  struct SweepPoint {
    OperatorTime time;
    std::size_t folder = 0;
    int placement = 0;
  };

  std::map<std::string, OperatorTime> exact;  // gemm, experts, attention, memop
  std::map<std::string, std::map<std::int64_t, SweepPoint>>
      sweeps;  // collective_key -> size -> row
  std::size_t ok_rows = 0;
  std::vector<std::string> files;
  std::size_t measured_folder = static_cast<std::size_t>(-1);  // whose rows are "measured"

  void read_folder(const std::string& dir, std::size_t folder);
  // Whether `path` was a report (and its ok rows are now indexed).
  bool read_file(const std::string& path, std::size_t folder);
  void index(ReportKind kind, const Row& r, std::size_t folder);
  void add_collective(const Row& r, OperatorTime t, std::size_t folder);
  std::optional<OperatorTime> collective(const StepCollective& c) const;
};

void ReportTimes::Impl::read_folder(const std::string& dir, std::size_t folder) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw bad_input(fmt::format("--from-reports {}: {}", dir,
                                fs::exists(dir, ec) ? "not a folder" : "no such folder"));
  // Sorted, so that "later rows win" means the same on every file system.
  std::vector<fs::path> csvs;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".csv")
      csvs.push_back(entry.path());
  if (ec)
    throw bad_input(fmt::format("--from-reports {}: cannot be listed: {}", dir, ec.message()));
  std::sort(csvs.begin(), csvs.end());
  bool any = false;
  for (const auto& path : csvs)
    any = read_file((fs::path(dir) / path.filename()).string(), folder) || any;
  if (!any)
    throw bad_input(fmt::format(
        "--from-reports {}: no bench_gemm, bench_attention, bench_memops or bench_ccl report in it",
        dir));
}

bool ReportTimes::Impl::read_file(const std::string& path, std::size_t folder) {
  const auto rows = read_csv(path);
  if (rows.empty()) return false;
  const ReportKind kind = classify(rows.front());
  if (kind == ReportKind::none) return false;
  files.push_back(path);
  std::unordered_map<std::string, std::size_t> columns;
  for (std::size_t i = 0; i < rows.front().size(); ++i)
    columns.emplace(rows.front()[i], i);
  const auto lines = line_numbers(rows);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const Row r(path, columns, rows[i], lines[i]);
    if (r.text("status") != "ok") continue;  // skipped and failed rows have no time to give
    index(kind, r, folder);
    ++ok_rows;
  }
  return true;
}

void ReportTimes::Impl::index(ReportKind kind, const Row& r, std::size_t folder) {
  const std::optional<double> time_us = r.real("time_us");
  if (!time_us) throw r.malformed("time_us", "", "a time (an ok row has one)");
  OperatorTime t;
  t.time_us = *time_us;
  t.source = r.where();
  // bench_ccl rows name no device; the backend (nccl, mpi) is what there is to say.
  t.device = std::string(r.has("device") ? r.text("device") : r.text("backend"));
  t.rse = r.real("rse");
  t.cv = r.real("cv");
  t.origin = folder == measured_folder ? "measured" : "reports";

  switch (kind) {
    case ReportKind::gemm: {
      const std::string impl(r.text("impl"));
      if (impl.empty()) {
        exact[gemm_key(gemm_key_of(r))] = std::move(t);
      } else {
        exact[experts_key(impl, gemm_key_of(r), r.integer("tokens_min"), r.integer("tokens_max"),
                          r.integer("tokens_total"))] = std::move(t);
      }
      break;
    }
    case ReportKind::attention:
      exact[attention_key(attention_key_of(r))] = std::move(t);
      break;
    case ReportKind::memops:
      exact[memop_key(memop_key_of(r))] = std::move(t);
      break;
    case ReportKind::collective:
      add_collective(r, std::move(t), folder);
      break;
    case ReportKind::none:
      break;
  }
}

void ReportTimes::Impl::add_collective(const Row& r, OperatorTime t, std::size_t folder) {
  const std::string key = collective_key(std::string(r.text("op")), r.integer("group_size"),
                                         dtype_text(r.text("dtype")));
  SweepPoint point{std::move(t), folder, placement_preference(r.text("placement"))};
  auto& sizes = sweeps[key];
  const std::int64_t size = r.integer("size_bytes");
  auto it = sizes.find(size);
  if (it == sizes.end()) {
    sizes.emplace(size, std::move(point));
  } else if (std::pair(point.folder, point.placement) >=
             std::pair(it->second.folder, it->second.placement)) {
    it->second = std::move(point);
  }
}

// The exact size when the sweep has it; else a straight line between the nearest sizes below and
// above (collective time is close to linear in size between neighbouring points of a sweep). A
// size outside the sweep has no time: extrapolating would guess at latency or bandwidth limits.
std::optional<OperatorTime> ReportTimes::Impl::collective(const StepCollective& c) const {
  auto s = sweeps.find(
      collective_key(coll_op_name(c.op), c.group_size, std::string(dtype_name(c.dtype))));
  if (s == sweeps.end()) return std::nullopt;
  const auto& sizes = s->second;
  auto hi = sizes.lower_bound(c.size_bytes);
  if (hi != sizes.end() && hi->first == c.size_bytes) return hi->second.time;
  if (hi == sizes.end() || hi == sizes.begin()) return std::nullopt;
  auto lo = std::prev(hi);
  const OperatorTime& a = lo->second.time;
  const OperatorTime& b = hi->second.time;
  const double f =
      static_cast<double>(c.size_bytes - lo->first) / static_cast<double>(hi->first - lo->first);
  OperatorTime t;
  t.time_us = a.time_us + f * (b.time_us - a.time_us);
  t.source = fmt::format("interpolated between {} B ({}) and {} B ({})", lo->first, a.source,
                         hi->first, b.source);
  t.device = a.device;
  t.origin = a.origin;
  // The larger of the two relative errors bounds the interpolated value's.
  if (a.rse && b.rse) t.rse = std::max(*a.rse, *b.rse);
  if (a.cv && b.cv) t.cv = std::max(*a.cv, *b.cv);
  return t;
}

// ---- the interface ----------------------------------------------------------------------------

ReportTimes ReportTimes::load(const std::vector<std::string>& dirs,
                              const std::string& measured_dir) {
  auto impl = std::make_shared<Impl>();
  for (std::size_t i = 0; i < dirs.size(); ++i)
    if (!measured_dir.empty() && dirs[i] == measured_dir) impl->measured_folder = i;
  for (std::size_t i = 0; i < dirs.size(); ++i)
    impl->read_folder(dirs[i], i);
  ReportTimes times;
  times.impl_ = std::move(impl);
  return times;
}

std::optional<OperatorTime> ReportTimes::find(const StepOperator& op) const {
  if (!impl_) return std::nullopt;
  std::string key;
  switch (op.family) {
    case StepFamily::gemm:
      key = gemm_key(gemm_key_of(op.gemm));
      break;
    case StepFamily::experts:
      key =
          experts_key(moe_impl_name(op.moe_impl), gemm_key_of(op.experts.padded()),
                      op.experts.min_tokens(), op.experts.max_tokens(), op.experts.total_tokens());
      break;
    case StepFamily::attention: {
      const AttentionShape& a = op.attention;
      key =
          attention_key({a.batch, a.seqlen_q, a.seqlen_kv, a.heads_q, a.heads_kv, a.head_dim_qk,
                         a.head_dim_v, a.causal ? "true" : "false",
                         std::string(dtype_name(a.dtype)), attention_pass_name(op.attention_pass)});
      break;
    }
    case StepFamily::memop: {
      const MemopCase& c = op.memop;
      key = memop_key({memop_name(c.op), mem_pass_name(c.pass), std::string(dtype_name(c.dtype)),
                       c.rows, c.cols, c.heads, c.kv_heads, c.head_dim, c.vocab});
      break;
    }
    case StepFamily::collective:
      return impl_->collective(op.collective);
  }
  auto it = impl_->exact.find(key);
  if (it == impl_->exact.end()) return std::nullopt;
  return it->second;
}

std::size_t ReportTimes::rows() const {
  return impl_ ? impl_->ok_rows : 0;
}

const std::vector<std::string>& ReportTimes::files() const {
  static const std::vector<std::string> none;
  return impl_ ? impl_->files : none;
}

}  // namespace opbench
