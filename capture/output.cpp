#include "capture/output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/prom_text.hpp"

namespace opbench::capture {

namespace {

bool is_gemm(const CaptureKey& k) {
  return std::string_view(k.kind) == "gemm";
}
bool is_attention(const CaptureKey& k) {
  return std::string_view(k.kind) == "attention";
}
bool is_collective(const CaptureKey& k) {
  return std::string_view(k.kind) == "collective" || std::string_view(k.kind) == "p2p";
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}
std::string num(std::int64_t v) {
  return std::to_string(v);
}

// RFC 4180: quote a field holding a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string layout(const CaptureKey& k) {
  if (!k.transa) return "";
  return std::string{k.transa, k.transb};
}

// Each reason for a missing time: its name in the JSON lines and the .prom label, and what it
// means to a reader (table.hpp's Untimed, in order).
constexpr const char* kUntimedName[kUntimedKinds] = {
    "completion_unseen", "no_gpu_events",         "graph_capture", "capture_unknown",
    "enqueued_later",    "in_flight_at_exit",     "not_in_trace",  "no_kernel",
    "not_sampled",       "several_communicators", "gpu_error",
};
constexpr const char* kUntimedWhy[kUntimedKinds] = {
    "their completion was not seen by a Wait/Test call",
    "no CUDA context or events to time them",
    "made during a CUDA-graph capture: they run at each replay of the graph, which no hook sees",
    "cuStreamIsCapturing failed, so whether they ran at the call is unknown",
    "an NCCL nonblocking communicator enqueued them later (ncclInProgress)",
    "still running on the GPU when the process ended",
    "from an execution trace, which records shapes and counts, not times",
    "without a GPU kernel in the trace",
    // (parenthesised: one element, split over two lines)
    ("left untimed by the sampling (after a shape's first OPBENCH_CAPTURE_TIME_FIRST calls, one "
     "in OPBENCH_CAPTURE_SAMPLE is timed)"),
    "ran in an NCCL group over several communicators, which one pair of events cannot time apart",
    "the driver refused their timing events (a kernel fault, or the device reset under them)",
};

std::string note(const TableRow& r) {
  if (r.timed_calls == r.calls) return "";
  const std::uint64_t untimed = r.calls - r.timed_calls;
  std::string text =
      std::to_string(untimed) + (untimed == 1 ? " call" : " calls") + " without a time";
  const char* sep = ": ";
  for (std::size_t i = 0; i < kUntimedKinds; ++i) {
    if (r.untimed[i] == 0) continue;
    text += sep + std::to_string(r.untimed[i]) + " " + kUntimedWhy[i];
    sep = "; ";
  }
  return text;
}

std::uint64_t graph_capture_calls(const TableRow& r) {
  return r.untimed[static_cast<std::size_t>(Untimed::graph_capture)];
}

std::uint64_t not_sampled_calls(const TableRow& r) {
  return r.untimed[static_cast<std::size_t>(Untimed::not_sampled)];
}

std::string prom_seconds(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", us / 1e6);
  return buf;
}

}  // namespace

std::string comm_id_text(std::uint64_t id) {
  if (id == 0) return "";
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, id);
  return text;
}

std::string shape_label(const CaptureKey& k) {
  if (is_attention(k))
    return "b" + std::to_string(k.batch) + " hq" + std::to_string(k.heads_q) + " hkv" +
           std::to_string(k.heads_kv) + " sq" + std::to_string(k.seq_q) + " skv" +
           std::to_string(k.seq_kv) + " d" + std::to_string(k.head_dim_qk) + "/" +
           std::to_string(k.head_dim_v) + (k.causal ? " causal" : "");
  if (!is_collective(k) && !is_gemm(k)) return "";
  if (is_gemm(k)) {
    std::string dims = std::to_string(k.m) + "x" + std::to_string(k.n) + "x" + std::to_string(k.k);
    if (k.batch != 1) dims = "b" + std::to_string(k.batch) + " " + dims;
    return dims + " " + layout(k);
  }
  std::string s = "count=" + std::to_string(k.count) + " comm_size=" + std::to_string(k.comm_size);
  if (k.comm_stride > 0) s += " comm_stride=" + std::to_string(k.comm_stride);
  if (k.comm_id != 0) s += " comm_id=" + comm_id_text(k.comm_id);
  if (*k.redop) s += std::string(" redop=") + k.redop;
  if (std::string_view(k.placement) == "in_place") s += " in_place";
  return s;
}

std::string csv_header() {
  return "host,rank,pid,source,api,kind,op,dtype,m,n,k,batch,layout,heads_q,heads_kv,seq_q,seq_kv,"
         "head_dim_qk,head_dim_v,causal,flops,bytes,count,comm_size,comm_stride,comm_id,redop,"
         "placement,calls,"
         "timed_calls,graph_capture_calls,not_sampled_calls,total_us,avg_us,min_us,p50_us,p99_us,"
         "max_us,note\n";
}

namespace {
// The cells from m to placement: a GEMM's, an attention's or a collective's; empty for the rest.
std::string shape_cells(const CaptureKey& k) {
  if (is_gemm(k))
    return num(k.m) + "," + num(k.n) + "," + num(k.k) + "," + num(k.batch) + "," + layout(k) +
           ",,,,,,,," + num(2 * k.batch * k.m * k.n * k.k) + ",,,,,,,";
  if (is_attention(k))
    return ",,," + num(k.batch) + ",," + num(k.heads_q) + "," + num(k.heads_kv) + "," +
           num(k.seq_q) + "," + num(k.seq_kv) + "," + num(k.head_dim_qk) + "," + num(k.head_dim_v) +
           "," + (k.causal ? "true" : "false") + ",,,,,,,,";
  if (is_collective(k))
    return ",,,,,,,,,,,,," + num(k.bytes) + "," + num(k.count) + "," + std::to_string(k.comm_size) +
           "," + (k.comm_stride > 0 ? std::to_string(k.comm_stride) : "") + "," +
           comm_id_text(k.comm_id) + "," + k.redop + "," + k.placement;
  return ",,,,,,,,,,,,,,,,,,,";
}
}  // namespace

std::string csv_text(const ProcessFacts& f, const std::vector<TableRow>& rows) {
  std::string out = csv_header();
  for (const TableRow& r : rows) {
    const CaptureKey& k = r.key;
    const bool timed = r.timed_calls > 0;
    std::string line = csv_field(f.host) + "," + f.rank + "," + std::to_string(f.pid) + "," +
                       f.source + "," + csv_field(k.api) + "," + k.kind + "," + csv_field(k.op) +
                       "," + k.dtype + "," + shape_cells(k);
    line += "," + std::to_string(r.calls) + "," + std::to_string(r.timed_calls) + "," +
            std::to_string(graph_capture_calls(r)) + "," + std::to_string(not_sampled_calls(r)) +
            ",";
    if (timed) {
      line += num(r.total_us) + "," + num(r.avg_us) + "," + num(r.min_us) + "," + num(r.p50_us) +
              "," + num(r.p99_us) + "," + num(r.max_us);
    } else {
      line += ",,,,,";
    }
    line += "," + csv_field(note(r)) + "\n";
    out += line;
  }
  return out;
}

std::string jsonl_text(const ProcessFacts& f, const std::vector<TableRow>& rows,
                       const std::string& written, bool final_write) {
  nlohmann::json run = {{"host", f.host},       {"rank", f.rank},
                        {"pid", f.pid},         {"command", f.command},
                        {"started", f.started}, {"written", written},
                        {"final", final_write}, {"forked_children", f.forked_children}};
  if (f.parent_pid != 0) run["parent_pid"] = f.parent_pid;
  if (f.gpu_sample_one_in != 0)
    run["gpu_sampling"] = {{"time_first", f.gpu_time_first}, {"one_in", f.gpu_sample_one_in}};
  std::string out;
  for (const TableRow& r : rows) {
    const CaptureKey& k = r.key;
    nlohmann::json row = {
        {"source", f.source}, {"api", k.api}, {"kind", k.kind}, {"op", k.op}, {"dtype", k.dtype}};
    if (is_attention(k)) {
      row.update({{"batch", k.batch},
                  {"heads_q", k.heads_q},
                  {"heads_kv", k.heads_kv},
                  {"seq_q", k.seq_q},
                  {"seq_kv", k.seq_kv},
                  {"head_dim_qk", k.head_dim_qk},
                  {"head_dim_v", k.head_dim_v},
                  {"causal", k.causal}});
    } else if (is_gemm(k)) {
      row.update({{"m", k.m},
                  {"n", k.n},
                  {"k", k.k},
                  {"batch", k.batch},
                  {"layout", layout(k)},
                  {"flops", 2 * k.batch * k.m * k.n * k.k}});
    } else if (is_collective(k)) {
      row.update({{"bytes", k.bytes}, {"count", k.count}, {"comm_size", k.comm_size}});
      if (k.comm_stride > 0) row["comm_stride"] = k.comm_stride;
      if (k.comm_id != 0) row["comm_id"] = comm_id_text(k.comm_id);
      if (*k.redop) row["redop"] = k.redop;
      if (*k.placement) row["placement"] = k.placement;
    }
    row["calls"] = r.calls;
    row["timed_calls"] = r.timed_calls;
    row["graph_capture_calls"] = graph_capture_calls(r);
    row["not_sampled_calls"] = not_sampled_calls(r);
    if (r.timed_calls < r.calls) {
      nlohmann::json why = nlohmann::json::object();
      for (std::size_t i = 0; i < kUntimedKinds; ++i)
        if (r.untimed[i] > 0) why[kUntimedName[i]] = r.untimed[i];
      row["untimed"] = why;
    }
    if (r.timed_calls > 0) {
      row["metrics"] = {{"total_us", r.total_us}, {"avg_us", r.avg_us}, {"min_us", r.min_us},
                        {"p50_us", r.p50_us},     {"p99_us", r.p99_us}, {"max_us", r.max_us}};
    }
    row["note"] = note(r);
    row["run"] = run;
    out += row.dump() + "\n";
  }
  return out;
}

std::string prom_text(const ProcessFacts& f, const std::vector<TableRow>& rows) {
  // Labels identify the series (host, rank, the call and its shape); the pid and the command
  // change from run to run and live in opbench_capture_info only. A forked child shares its
  // parent's host and rank, so its series carry its pid too: each child is a series of its own.
  const std::string process =
      "host=\"" + prom_label_value(f.host) + "\",rank=\"" + prom_label_value(f.rank) + "\"" +
      (f.parent_pid != 0 ? ",pid=\"" + std::to_string(f.pid) + "\"" : std::string());
  auto labels = [&](const CaptureKey& k) {
    return process + ",api=\"" + k.api + "\",kind=\"" + k.kind + "\",op=\"" + k.op + "\",dtype=\"" +
           k.dtype + "\",shape=\"" + prom_label_value(shape_label(k)) + "\"";
  };
  std::string out;
  out +=
      "# HELP opbench_capture_info The capturing process: 1, with its pid and command line as "
      "labels.\n# TYPE opbench_capture_info gauge\n";
  out += "opbench_capture_info{host=\"" + prom_label_value(f.host) + "\",rank=\"" +
         prom_label_value(f.rank) + "\",pid=\"" + std::to_string(f.pid) + "\"" +
         (f.parent_pid != 0 ? ",parent_pid=\"" + std::to_string(f.parent_pid) + "\"" : "") +
         ",command=\"" + prom_label_value(f.command) + "\"} 1\n";
  out +=
      "# HELP opbench_capture_calls_total Intercepted calls of one API and shape in this "
      "process, timed or not.\n# TYPE opbench_capture_calls_total counter\n";
  for (const TableRow& r : rows)
    out += "opbench_capture_calls_total{" + labels(r.key) + "} " + std::to_string(r.calls) + "\n";
  out +=
      "# HELP opbench_capture_untimed_calls_total Intercepted calls of one API and shape without "
      "a time, by reason (graph_capture: made during a CUDA-graph capture, run at each replay "
      "unseen).\n# TYPE opbench_capture_untimed_calls_total counter\n";
  for (const TableRow& r : rows)
    for (std::size_t i = 0; i < kUntimedKinds; ++i)
      if (r.untimed[i] > 0)
        out += "opbench_capture_untimed_calls_total{" + labels(r.key) + ",reason=\"" +
               kUntimedName[i] + "\"} " + std::to_string(r.untimed[i]) + "\n";
  out +=
      "# HELP opbench_capture_call_duration_seconds Time of one intercepted call inside the job "
      "(host calls: wall time of the call; nonblocking MPI: post to completion); quantile 0 and "
      "1 are the exact min and max, 0.5 and 0.99 within 1%.\n"
      "# TYPE opbench_capture_call_duration_seconds summary\n";
  for (const TableRow& r : rows) {
    if (r.timed_calls == 0) continue;
    const std::string l = labels(r.key);
    const std::pair<const char*, double> qs[] = {
        {"0", r.min_us}, {"0.5", r.p50_us}, {"0.99", r.p99_us}, {"1", r.max_us}};
    for (const auto& [q, us] : qs)
      out += "opbench_capture_call_duration_seconds{" + l + ",quantile=\"" + q + "\"} " +
             prom_seconds(us) + "\n";
    out +=
        "opbench_capture_call_duration_seconds_sum{" + l + "} " + prom_seconds(r.total_us) + "\n";
    out += "opbench_capture_call_duration_seconds_count{" + l + "} " +
           std::to_string(r.timed_calls) + "\n";
  }
  return out;
}

bool write_atomically(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string final_path = dir + "/" + name;
  const std::string tmp = dir + "/." + name + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = saved;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    return false;
  }
  return true;
}

}  // namespace opbench::capture
