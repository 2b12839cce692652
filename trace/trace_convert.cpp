// trace_convert: a PyTorch profiler (Kineto) or execution trace, or a folder of per-rank ones,
// written as the capture library's files (capture-<host>-rank<r>.csv and .jsonl, `source`
// trace:gpu, trace:cpu or trace:et), so that a converted trace goes wherever a capture goes.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <vector>

#include "capture/output.hpp"
#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/main_guard.hpp"
#include "common/version.hpp"
#include "trace/trace_reader.hpp"

namespace {

namespace fs = std::filesystem;
using opbench::bad_input;

// A new folder, or an empty one: the conversion never overwrites or sets aside a file it did not
// write.
void make_out(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) throw bad_input(fmt::format("--out {}: not a folder", out));
    if (!fs::is_empty(out, ec))
      throw bad_input(fmt::format("--out {}: not empty; give a new or empty folder", out));
    return;
  }
  fs::create_directories(out, ec);
  if (ec) throw bad_input(fmt::format("--out {}: cannot make it: {}", out, ec.message()));
}

// capture-<host>-rank<r>, or -pid<p> without a rank. tensorboard_trace_handler writes a file per
// profiling cycle, all of the same host and pid: such traces get -1, -2, ... in file-name order
// (their time stamps' order), so that every cycle is kept and the replays add their calls up.
std::vector<std::string> output_names(
    const std::vector<std::unique_ptr<opbench::trace::TraceTable>>& tables) {
  std::vector<std::string> bases;
  std::map<std::string, int> uses;
  for (const auto& t : tables) {
    bases.push_back(
        "capture-" + t->facts.host + "-" +
        (t->facts.rank.empty() ? "pid" + std::to_string(t->facts.pid) : "rank" + t->facts.rank));
    ++uses[bases.back()];
  }
  std::map<std::string, int> seen;
  for (std::string& base : bases)
    if (uses[base] > 1) base += "-" + std::to_string(++seen[base]);
  return bases;
}

int convert(int argc, char** argv) {
  cxxopts::Options options("trace_convert",
                           "A PyTorch profiler or execution trace (a file, or a folder of "
                           "per-rank files) written as capture files");
  options.add_options()("trace-path", "a trace file (.json or .json.gz) or a folder of them",
                        cxxopts::value<std::string>())(
      "out", "a new or empty folder for the capture files", cxxopts::value<std::string>());
  // the shared parser: an unknown flag or a stray argument is a bad-input line, as everywhere
  const auto read = opbench::parse_command_line(
      options, argc, argv, [] { opbench::print_versions("trace_convert", {}); });
  if (!read) return 0;
  const auto& parsed = *read;
  if (!parsed.count("trace-path")) throw bad_input("--trace-path is required");
  if (!parsed.count("out")) throw bad_input("--out is required");
  const std::string out = parsed["out"].as<std::string>();
  const auto tables = opbench::trace::read_traces(parsed["trace-path"].as<std::string>());
  make_out(out);
  const std::vector<std::string> bases = output_names(tables);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const auto& t = tables[i];
    const std::string& base = bases[i];
    for (const auto& [name, text] :
         {std::pair{base + ".csv", t->csv()}, std::pair{base + ".jsonl", t->jsonl()}})
      if (!opbench::capture::write_atomically(out, name, text))
        throw opbench::run_failure(
            fmt::format("{}/{}: cannot write: {}", out, name, std::strerror(errno)));
    std::uint64_t calls = 0;
    const auto rows = t->rows();
    for (const auto& r : rows)
      calls += r.calls;
    std::cout << fmt::format("{} -> {}/{}.csv: {}, {} shapes, {} calls{}\n", t->path, out, base,
                             t->facts.source, rows.size(), calls,
                             t->steps ? fmt::format(", {} steps", t->steps) : "");
    for (const std::string& note : t->notes)
      std::cout << "  note: " << note << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return opbench::run_guarded(argc, argv, convert);
}
