#include "common/job_shapes.hpp"

#include <fmt/format.h>

#include <cxxopts.hpp>

#include "common/error.hpp"

namespace opbench {

void add_job_shapes_options(cxxopts::Options& options, const std::string& group,
                            std::string_view what, bool with_rank) {
  options.add_options(group)("capture-path",
                             fmt::format("a capture folder (scripts/capture.sh --out): {}", what),
                             cxxopts::value<std::string>())(
      "trace-path",
      fmt::format("a PyTorch profiler trace (record_shapes=True) or execution trace, a file "
                  "(.json, .json.gz) or a folder of per-rank files, read as a capture: {}",
                  what),
      cxxopts::value<std::string>());
  if (with_rank)
    options.add_options(group)("rank",
                               "with --capture-path or --trace-path: only that rank's tables "
                               "(default: every rank's, merged)",
                               cxxopts::value<int>());
}

JobShapesOptions read_job_shapes_options(const cxxopts::ParseResult& p, bool with_rank) {
  JobShapesOptions o;
  if (p.count("capture-path")) o.capture_path = p["capture-path"].as<std::string>();
  if (p.count("trace-path")) o.trace_path = p["trace-path"].as<std::string>();
  if (!o.capture_path.empty() && !o.trace_path.empty())
    throw bad_input("--capture-path and --trace-path both give the job's shapes: give one");
  if (with_rank && p.count("rank")) {
    if (!o.wanted())
      throw bad_input("--rank picks a rank's tables: give --capture-path or --trace-path too");
    o.rank = p["rank"].as<int>();
    if (*o.rank < 0) throw bad_input(fmt::format("--rank: must be >= 0, got {}", *o.rank));
  }
  return o;
}

}  // namespace opbench
