#include "trace/trace_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <utility>

#include "common/error.hpp"
#include "trace/execution_trace.hpp"
#include "trace/json_stream.hpp"
#include "trace/kineto_trace.hpp"

namespace opbench::trace {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_trace_name(const std::string& name) {
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

// The members read before the events tell which kind of trace this is; they wait for it.
class TraceSink : public JsonSink {
 public:
  TraceSink(const std::string& path, const World& world,
            const std::unordered_map<std::int64_t, ShapeHint>* hints = nullptr)
      : path_(path), world_(world), hints_(hints) {}

  void member(const std::string& key, const nlohmann::json& value) override {
    if (kineto_)
      kineto_->member(key, value);
    else if (et_)
      et_->member(key, value);
    else
      early_.emplace_back(key, value);
  }
  void element(const std::string& key, nlohmann::json& value) override {
    if (key == "traceEvents") {
      if (!kineto_ && !et_) start(std::make_unique<KinetoReader>(path_, world_, hints_), kineto_);
      if (kineto_) kineto_->event(value);
    } else if (key == "nodes") {
      if (!kineto_ && !et_) start(std::make_unique<ExecutionTraceReader>(path_, world_), et_);
      if (et_) et_->node(value);
    }
  }
  std::unique_ptr<TraceTable> finish() {
    if (kineto_) return kineto_->finish();
    if (et_) {
      auto table = et_->finish();
      hints_out_ = et_->take_hints();
      return table;
    }
    throw bad_input(
        fmt::format("{}: neither a PyTorch profiler trace (no traceEvents) nor an "
                    "execution trace (no nodes)",
                    path_));
  }

 private:
  template <class Reader>
  void start(std::unique_ptr<Reader> reader, std::unique_ptr<Reader>& slot) {
    slot = std::move(reader);
    for (const auto& [key, value] : early_)
      slot->member(key, value);
    early_.clear();
  }

  std::string path_;
  World world_;
  const std::unordered_map<std::int64_t, ShapeHint>* hints_;
  std::vector<std::pair<std::string, nlohmann::json>> early_;
  std::unique_ptr<KinetoReader> kineto_;
  std::unique_ptr<ExecutionTraceReader> et_;

 public:
  bool execution_trace() const { return et_ != nullptr; }
  bool any_trace() const { return kineto_ != nullptr || et_ != nullptr; }
  std::unordered_map<std::int64_t, ShapeHint> hints_out_;  // an execution trace's, after finish()
};

// "rank3", "rank_3", "rank-3" in a file name.
std::string rank_in_name(const std::string& name) {
  for (std::size_t at = name.find("rank"); at != std::string::npos;
       at = name.find("rank", at + 1)) {
    std::size_t i = at + 4;
    if (i < name.size() && (name[i] == '_' || name[i] == '-')) ++i;
    std::size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])))
      ++j;
    // as a number: rank00 is distributedInfo's rank 0
    while (j - i > 1 && name[i] == '0')
      ++i;
    if (j > i) return name.substr(i, j - i);
  }
  return "";
}

// tensorboard_trace_handler's <host>_<pid>.<time>.pt.trace.json: only such a name (et_0.json is
// no host "et" of pid 0)
void host_and_pid(const std::string& name, TraceTable& t) {
  if (!ends_with(name, ".pt.trace.json") && !ends_with(name, ".pt.trace.json.gz")) return;
  const std::string worker = name.substr(0, name.find('.'));
  const auto cut = worker.rfind('_');
  if (cut == std::string::npos || cut + 1 >= worker.size()) return;
  const std::string pid = worker.substr(cut + 1);
  if (!std::all_of(pid.begin(), pid.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return;
  t.facts.host = worker.substr(0, cut);
  t.facts.pid = std::stol(pid);
}

// Whether an execution trace (`et`) and a profiler trace of `rank` and `pid` are the same
// process's: the same rank where both say one (rank00 and 0 alike: rank_in_name), else the
// same pid (an execution trace's "pid" is its process's, which the profiler trace's operators
// carry; Chakra's kineto_trace_0.json and et_0.json name no rank).
bool same_process(const capture::ProcessFacts& et, const std::string& rank, long pid) {
  if (!et.rank.empty() && !rank.empty()) return et.rank == rank;
  return pid > 0 && et.pid == pid;
}

// What a trace says before its events: which rank it is and how many there are. Reading stops at
// the first event, so a trace of several GB costs its first few KB here. Only an event stops it:
// Kineto writes the deviceProperties array (one element a GPU) before the distributedInfo.
class HeaderSink : public JsonSink {
 public:
  struct Done {};
  void member(const std::string& key, const nlohmann::json& value) override {
    if (key != "distributedInfo" || !value.is_object()) return;
    const auto r = value.find("rank");
    if (r != value.end() && r->is_number_integer()) rank = std::to_string(r->get<std::int64_t>());
    const auto w = value.find("world_size");
    if (w != value.end() && w->is_number_integer() && w->get<std::int64_t>() > 0)
      world_size = static_cast<int>(w->get<std::int64_t>());
  }
  void element(const std::string& key, nlohmann::json&) override {
    if (key == "traceEvents" || key == "nodes") throw Done{};
  }

  std::string rank;
  int world_size = 0;
};

// A profiler trace's distributedInfo world_size; else the distinct ranks of the files (a rank's
// profiler and execution traces are one rank; a file without a rank, by its tensorboard host and
// pid, or alone). Not the number of files: a rank's two traces would count twice.
World world_of(const std::vector<std::string>& files) {
  int stated = 0;
  std::set<std::string> ranks;
  for (const std::string& file : files) {
    HeaderSink header;
    try {
      stream_json(file, header);
      continue;  // no event or node: not a trace (read_traces leaves it out), no rank
    } catch (const HeaderSink::Done&) {
    }
    stated = std::max(stated, header.world_size);
    const std::string name = fs::path(file).filename().string();
    std::string rank = header.rank.empty() ? rank_in_name(name) : header.rank;
    if (rank.empty()) {
      TraceTable named;
      host_and_pid(name, named);
      rank = named.facts.host.empty()
                 ? "file " + file
                 : named.facts.host + " pid " + std::to_string(named.facts.pid);
    }
    ranks.insert(rank);
  }
  if (stated > 0) return {stated, "a profiler trace's distributedInfo world_size"};
  const int n = static_cast<int>(ranks.size());
  return {n, "the number of ranks whose traces were read together (no distributedInfo world_size)"};
}

}  // namespace

std::vector<std::unique_ptr<TraceTable>> read_traces(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  const bool folder = fs::is_directory(path, ec);
  if (folder) {
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file() && is_trace_name(entry.path().filename().string()))
        files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty())
      throw bad_input(
          fmt::format("--trace-path {}: no *.json or *.json.gz trace in the folder", path));
  } else if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else {
    throw bad_input(fmt::format("--trace-path {}: no such file or folder", path));
  }
  // A rank's profiler trace holds its times; an execution trace beside it only gives the shapes a
  // profiler trace without record_shapes lacks, and is not read as a table of its own.
  struct Read {
    std::unique_ptr<TraceTable> table;
    bool execution_trace = false;
    std::unordered_map<std::int64_t, ShapeHint> hints;
  };
  std::vector<Read> reads;
  std::vector<std::pair<std::string, NoShapes>> shapeless;  // file, and why
  const World world = world_of(files);
  auto label = [](TraceTable& t, const std::string& file) {
    const std::string name = fs::path(file).filename().string();
    if (t.facts.host.empty()) t.facts.host = "trace";
    host_and_pid(name, t);
    if (t.facts.rank.empty()) t.facts.rank = rank_in_name(name);
  };
  // In a folder, a JSON file that is neither kind of trace (a config.json, export_memory_timeline's
  // output) is left out, and said in every table's notes; alone, or when nothing else is left,
  // it is refused.
  std::vector<std::string> left_out;
  for (const std::string& file : files) {
    TraceSink sink(file, world);
    stream_json(file, sink);
    if (folder && !sink.any_trace()) {
      left_out.push_back(fs::path(file).filename().string());
      continue;
    }
    try {
      Read r{sink.finish(), sink.execution_trace(), std::move(sink.hints_out_)};
      label(*r.table, file);
      reads.push_back(std::move(r));
    } catch (const NoShapes& e) {
      shapeless.emplace_back(file, e);
    }
  }
  for (const auto& [file, why] : shapeless) {
    const std::string rank =
        why.rank().empty() ? rank_in_name(fs::path(file).filename().string()) : why.rank();
    const long pid = why.pid();  // (a structured binding: not captured by a lambda in C++20)
    const auto et = std::find_if(reads.begin(), reads.end(), [&](const Read& r) {
      return r.execution_trace && same_process(r.table->facts, rank, pid);
    });
    if (et == reads.end()) throw why;
    TraceSink sink(file, world, &et->hints);
    stream_json(file, sink);
    Read r{sink.finish(), false, {}};
    label(*r.table, file);
    reads.push_back(std::move(r));
  }
  std::vector<std::unique_ptr<TraceTable>> tables;
  for (Read& r : reads) {
    const bool timed_elsewhere =
        r.execution_trace && std::any_of(reads.begin(), reads.end(), [&](const Read& o) {
          return !o.execution_trace &&
                 same_process(r.table->facts, o.table->facts.rank, o.table->facts.pid);
        });
    if (!timed_elsewhere) tables.push_back(std::move(r.table));
  }
  if (tables.empty() && !left_out.empty())
    throw bad_input(fmt::format(
        "--trace-path {}: no PyTorch profiler or execution trace in the folder (neither "
        "traceEvents nor nodes in {})",
        path, fmt::join(left_out, ", ")));
  for (auto& t : tables)
    for (const std::string& name : left_out)
      t->notes.push_back(fmt::format(
          "{} in the same folder left out: neither a PyTorch profiler trace (no traceEvents) "
          "nor an execution trace (no nodes)",
          name));
  std::sort(tables.begin(), tables.end(),
            [](const auto& a, const auto& b) { return a->path < b->path; });
  return tables;
}

}  // namespace opbench::trace
