#include "collectives/ccl_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "collectives/rank_groups.hpp"
#include "common/capture_tables.hpp"
#include "common/text.hpp"

namespace opbench {

Layout layout_of(const std::vector<std::string>& hosts, int group_size, int stride) {
  Layout out;
  if (hosts.empty() || group_size < 1) return out;
  std::map<std::string, int> per_node;
  for (const auto& h : hosts)
    ++per_node[h];
  out.ranks_per_node_min = out.ranks_per_node_max = per_node.begin()->second;
  for (const auto& [host, n] : per_node) {
    out.ranks_per_node_min = std::min(out.ranks_per_node_min, n);
    out.ranks_per_node_max = std::max(out.ranks_per_node_max, n);
  }
  const int world = static_cast<int>(hosts.size());
  std::map<int, std::set<std::string>> nodes;  // each group's, by its leader
  for (int r = 0; r < world; ++r)
    nodes[group_leader(r, world, {group_size, stride})].insert(hosts[static_cast<std::size_t>(r)]);
  const auto spanning = std::count_if(nodes.begin(), nodes.end(),
                                      [](const auto& group) { return group.second.size() > 1; });
  out.group_spans_nodes = spanning == 0                                           ? "no"
                          : spanning == static_cast<std::ptrdiff_t>(nodes.size()) ? "yes"
                                                                                  : "some";
  return out;
}

Record ccl_row(const CclCase& c, const CollCall& call, const CollResult& r, const CclContext& ctx) {
  const int n = c.group_size;
  const std::size_t ts = dtype_size(c.dtype);
  const bool measured = !r.rank_times_us.empty();  // a failed call may have no time
  const double seconds = r.time_us * 1e-6;
  const double bytes = algbw_bytes(c.op, call.counts, ts, n);
  const int groups = ctx.world_size / n;
  std::optional<double> algbw, busbw;
  if (measured && seconds > 0) {
    algbw = bytes / seconds / 1e9;
    busbw = *algbw * busbw_factor(c.op, n);
  }
  auto timed = [&](double v) { return measured ? Value{v} : Value{}; };
  auto times = [&](std::optional<double> v, int k) {
    return v ? std::optional<double>(*v * k) : std::nullopt;
  };

  Record row;
  row.arg("op", coll_op_name(c.op)).arg("label", c.label.empty() ? Value{} : Value{c.label});
  row.arg("world_size", std::int64_t{ctx.world_size}).arg("group_size", std::int64_t{n});
  const Layout layout = layout_of(ctx.hosts, n, c.stride);
  row.arg("num_groups", std::int64_t{groups})
      .arg("group_stride", std::int64_t{c.stride})
      .arg("ranks_per_node", layout.ranks_per_node_min == layout.ranks_per_node_max
                                 ? Value{std::int64_t{layout.ranks_per_node_min}}
                                 : Value{});
  row.arg("ranks_per_node_min", std::int64_t{layout.ranks_per_node_min})
      .arg("ranks_per_node_max", std::int64_t{layout.ranks_per_node_max})
      .arg("group_spans_nodes", layout.group_spans_nodes);
  row.arg("nodes", std::int64_t{ctx.nodes}).arg("backend", ctx.backend);
  row.arg("dtype", std::string(dtype_name(c.dtype)));
  row.arg("redop", is_reduction(c.op) ? Value{red_op_name(c.redop)} : Value{});
  row.arg("root", has_root(c.op) ? Value{std::int64_t{c.root}} : Value{});
  row.arg("placement", placement_name(c.placement));
  row.arg("size_bytes", call.counts.size_bytes(ts)).arg("count", call.counts.count);
  row.arg("iters", std::int64_t{ctx.iters})
      .arg("calls_per_step", c.calls_per_step ? Value{c.calls_per_step} : Value{});
  row.metric("time_us", timed(r.time_us)).metric("min_time_us", timed(r.min_time_us));
  if (c.captured) {
    // the job's own average beside this run's: above 1, the job's calls were slower
    add_in_job_columns(row, {c.label, c.captured_calls, c.in_job_us},
                       r.status == Status::ok ? std::optional<double>(r.time_us) : std::nullopt);
  }
  row.metric("max_time_us", timed(r.max_time_us));
  row.optional_metric("algbw_gbps", algbw).optional_metric("busbw_gbps", busbw);
  // --group-size runs: the bandwidth of all concurrent groups together (algbw x num_groups).
  // Not ByteMicroPerf's algo_bw_sum, which adds every rank's own figure (docs/outputs.md).
  row.optional_metric("algbw_all_groups_gbps", times(algbw, groups))
      .optional_metric("busbw_all_groups_gbps", times(busbw, groups));
  // ByteMicroPerf's byte fields: algo size (the bytes algbw divides, nccl-tests' size) and bus
  // size (algo size x the op's bus factor, the bytes busbw divides), rounded to a whole byte:
  // 2(n-1)/n of 1000 bytes on 3 ranks is 1333 B, not 1333.333.
  row.metric("algo_size_bytes", static_cast<std::int64_t>(bytes))
      .metric("bus_size_bytes",
              static_cast<std::int64_t>(std::llround(bytes * busbw_factor(c.op, n))));
  const Stats* s = r.iter_stats ? &*r.iter_stats : nullptr;
  row.metric("p50_us", s ? Value{s->median} : Value{})
      .metric("p99_us", s ? Value{s->p99} : Value{});
  row.metric("iter_min_us", s ? Value{s->min} : Value{})
      .metric("iter_max_us", s ? Value{s->max} : Value{});
  row.metric("cv", s ? Value{s->cv} : Value{});
  // The adaptive stop: samples of `iters` calls, and the relative standard error of their mean.
  const Stats* sampled = r.sample_stats ? &*r.sample_stats : nullptr;
  row.metric("samples", sampled ? Value{static_cast<std::int64_t>(sampled->count)} : Value{})
      .metric("rse", sampled ? Value{sampled->rse} : Value{});
  row.result("wrong", r.wrong >= 0 ? Value{r.wrong} : Value{});
  row.result("aggregation", aggregation_name(ctx.aggregation));
  row.result("status", std::string(status_name(r.status)))
      .result("note", r.note.empty() ? Value{} : Value{r.note});
  if (measured) {
    row.extra()["latency_list_us"] = r.rank_times_us;
    if (!r.samples_us.empty()) row.extra()["samples_us"] = r.samples_us;
    std::vector<double> alg, bus;
    for (double t : r.rank_times_us) {
      alg.push_back(t > 0 ? bytes / (t * 1e-6) / 1e9 : 0);
      bus.push_back(alg.back() * busbw_factor(c.op, n));
    }
    row.extra()["algbw_list_gbps"] = alg;
    row.extra()["busbw_list_gbps"] = bus;
    if (!r.iter_times_us.empty()) row.extra()["iter_times_us"] = r.iter_times_us;
  }
  return row;
}

namespace {

// A time in nccl-tests' column: 7 wide, whole microseconds from 10 ms up.
std::string column_time(double us) {
  return us >= 10000 ? fmt::format("{:7.0f}", us) : fmt::format("{:7.2f}", us);
}

// A row's fields as ccl_row wrote them: text, a whole number, a real; empty when the row has none.
std::string text_field(const Record& row, std::string_view name) {
  const auto* v = row.get<std::string>(name);
  return v ? *v : std::string();
}
template <typename T>
std::optional<T> number_field(const Record& row, std::string_view name) {
  const auto* v = row.get<T>(name);
  return v ? std::optional<T>(*v) : std::nullopt;
}

}  // namespace

void NcclTestsTable::header(const Record& row) {
  const std::string label = text_field(row, "label");
  std::fprintf(out_, "#\n# %s, %s, groups of %lld ranks%s\n", text_field(row, "op").c_str(),
               nccl_tests_type_name(parse_dtype(text_field(row, "dtype"))).c_str(),
               static_cast<long long>(number_field<std::int64_t>(row, "group_size").value_or(0)),
               label.empty() ? "" : (": " + label).c_str());
  const char* extra = per_iter_ ? "    i_p50   i_p99  i_cv%" : "";
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %-37s  %-37s\n", "", "", "", "", "",
               "          out-of-place", "            in-place");
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s%s  %7s  %6s  %6s  %6s%s\n",
               "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", extra,
               "time", "algbw", "busbw", "#wrong", extra);
  std::fprintf(out_, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s%s  %7s  %6s  %6s  %6s%s\n",
               "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
               per_iter_ ? "     (us)    (us)    (%)" : "", "(us)", "(GB/s)", "(GB/s)", "",
               per_iter_ ? "     (us)    (us)    (%)" : "");
}

void NcclTestsTable::print(const Record& row) {
  const std::string op = text_field(row, "op"), dtype = text_field(row, "dtype");
  const std::int64_t size = number_field<std::int64_t>(row, "size_bytes").value_or(0);
  // redop and root are empty for an op without them: nccl-tests prints "none" and -1
  const std::string redop = text_field(row, "redop");
  const std::int64_t root = number_field<std::int64_t>(row, "root").value_or(-1);
  const std::string section = fmt::format("{} {} {} {}", op, dtype,
                                          number_field<std::int64_t>(row, "group_size").value_or(0),
                                          text_field(row, "label"));
  const std::string key = fmt::format("{} {} {} {}", section, size, redop, root);
  if (key != line_key_) flush_line();
  if (section != section_) {
    if (!section_.empty() && op != op_) footer();  // a new op: the last one's figures
    header(row);
    section_ = section;
    op_ = op;
  }
  line_key_ = key;
  line_prefix_ =
      fmt::format("  {:>10}  {:>12}  {:>8}  {:>6}  {:>6}", size,
                  number_field<std::int64_t>(row, "count").value_or(0),
                  nccl_tests_type_name(parse_dtype(dtype)), redop.empty() ? "none" : redop, root);
  const std::string status = text_field(row, "status");
  const std::optional<double> time_us = number_field<double>(row, "time_us");
  std::string cell;
  if (!time_us) {  // skipped, or failed before a time was taken
    cell = fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", status == "skipped" ? "skip" : "fail", "-",
                       "-", "-");
  } else {
    const double busbw = number_field<double>(row, "busbw_gbps").value_or(0);
    const std::optional<std::int64_t> wrong = number_field<std::int64_t>(row, "wrong");
    cell = fmt::format("  {}  {:6.2f}  {:6.2f}  {:>6}", column_time(*time_us),
                       number_field<double>(row, "algbw_gbps").value_or(0), busbw,
                       wrong ? std::to_string(*wrong) : "N/A");
    const std::optional<double> p50 = number_field<double>(row, "p50_us");
    if (per_iter_ && p50)
      cell += fmt::format("  {} {} {:6.2f}", column_time(*p50),
                          column_time(number_field<double>(row, "p99_us").value_or(0)),
                          number_field<double>(row, "cv").value_or(0) * 100);
    busbw_sum_ += busbw;
    ++busbw_count_;
    if (wrong && *wrong > 0) wrong_total_ += *wrong;
  }
  failed_rows_ += status == "failed";
  cells_[text_field(row, "placement") == "in_place" ? 1 : 0] = cell;
  if (++cells_filled_ == placements_) flush_line();
}

void NcclTestsTable::flush_line() {
  if (line_key_.empty()) return;
  std::string blank = fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "", "", "", "");
  std::fprintf(out_, "%s%s%s\n", line_prefix_.c_str(),
               (cells_[0].empty() ? blank : cells_[0]).c_str(),
               (cells_[1].empty() ? blank : cells_[1]).c_str());
  std::fflush(out_);
  cells_[0].clear();
  cells_[1].clear();
  cells_filled_ = 0;
  line_key_.clear();
}

// nccl-tests' footer, once per op (each of its binaries runs one op): the wrong elements and the
// mean bus bandwidth over the op's timed rows.
void NcclTestsTable::footer() {
  flush_line();
  const bool failed = wrong_total_ > 0 || failed_rows_ > 0;
  std::fprintf(out_, "# %-20s : %lld %s\n", "Out of bounds values",
               static_cast<long long>(wrong_total_), failed ? "FAILED" : "OK");
  std::fprintf(out_, "# %-20s : %g  (%s)\n#\n", "Avg bus bandwidth",
               busbw_count_ ? busbw_sum_ / busbw_count_ : 0.0, op_.c_str());
  std::fflush(out_);
  busbw_sum_ = 0;
  busbw_count_ = 0;
  wrong_total_ = 0;
  failed_rows_ = 0;
}

void NcclTestsTable::finish() {
  if (!section_.empty()) footer();
}

CclReports::CclReports(const CclOptions& o, const std::string& dir, nlohmann::json run,
                       CaseLoop& loop)
    : per_op_(dir, "ccl", o.report, std::move(run), "opbench_ccl", loop) {
  if (!o.report_csv_path.empty()) all_ = std::make_unique<CsvWriter>(o.report_csv_path);
}

void CclReports::write(const Record& row) {
  if (all_) all_->write(row);
  per_op_.open(std::get<std::string>(*row.find("op")), row).write(row);
}

std::vector<std::string> CclReports::listing() const {
  std::vector<std::string> out;
  // the file is created with its first row: a run stopped before one has none to name
  if (all_ && all_->created())
    out.push_back(fmt::format("{} ({})", all_->path(), counted(all_->rows(), "row")));
  for (auto& line : per_op_.listing())
    out.push_back(std::move(line));
  return out;
}

}  // namespace opbench
