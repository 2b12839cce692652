#pragma once
// Command-line parsing shared by every binary: sizes ("64K", "1G"), integer lists with
// start:stop:step ranges, and the option groups all binaries have (measurement, reports, peaks).
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/measure.hpp"
#include "common/report_files.hpp"

// Declared, not included: cxxopts.hpp costs 3 s of compile in each file, and of the 26 that
// include this one only the 8 that build or read the options (cli.cpp, the *_options.cpp) use it.
namespace cxxopts {
class Options;
class ParseResult;
}  // namespace cxxopts

namespace opbench {

// "4096", "64K", "64KB", "64KiB", "1.5M", "2G" -> bytes, with K = 1024 as in nccl-tests.
// `what` names the flag in the error message.
std::uint64_t parse_size(std::string_view text, std::string_view what = "size");

// A positive integer, with the same suffixes as parse_size.
std::int64_t parse_positive_int(std::string_view text, std::string_view what);

// Comma-separated items, each an integer or an inclusive range start:stop[:step] (step 1 when
// omitted; stop is included when the steps land on it) or start:stop:xF (times F each step):
// "128,256", "64:8192:64", "1K:1G:x2".
std::vector<std::int64_t> parse_int_list(std::string_view text, std::string_view what);

struct ReportOptions {
  std::string report_dir;  // where CSV, JSON lines and environment.json go
  bool quiet = false;      // no progress on stderr
  std::set<ReportFormat> formats{ReportFormat::csv, ReportFormat::jsonl};
  bool formats_given = false;  // --format was on the command line (not its default)
  std::string summary_path;    // Markdown summary, when asked for
  bool resume = false;         // continue the reports in report_dir, skipping the cases they hold
};

struct PeakOverrides {
  std::optional<double> peak_tflops;
  std::optional<double> peak_bw_gbps;
  std::string hardware_config_path;  // empty: configs/hardware.json found next to the binary
};

// The measurement flags; their defaults depend on the backend (measure_defaults), so a flag
// only overrides when given. `with_warmup` false: the binary warms up by call count (-w).
// `profiles`: the binary's own defaults, shown in each flag's help ("CPU", "GPU").
struct MeasureDefaults {
  std::string name;
  MeasureOptions options;
};
void add_measure_options(cxxopts::Options& options, const std::vector<MeasureDefaults>& profiles,
                         bool with_warmup = true);
MeasureOverrides read_measure_overrides(const cxxopts::ParseResult& parsed,
                                        bool with_warmup = true);

// `resumable`: the binary offers --resume (bench_ccl and bench_fsdp run again quickly instead).
void add_report_options(cxxopts::Options& options, std::string_view binary, bool resumable = true);
ReportOptions read_report_options(const cxxopts::ParseResult& parsed);

// The peaks a binary's rows are a percentage of: a flag is offered only where a column uses it
// (bench_memops has no FLOPS peak, bench_attention and bench_step no bandwidth one), so no
// documented flag is silently ignored.
struct PeakFlags {
  bool tflops = true;     // --peak-tflops: pct_peak_flops, mfu
  bool bandwidth = true;  // --peak-bw: pct_peak_bw, pct_peak
};
void add_peak_options(cxxopts::Options& options, PeakFlags which = {});
PeakOverrides read_peak_options(const cxxopts::ParseResult& parsed, PeakFlags which = {});

// cxxopts needs long flags of two letters or more; "--m 8" and "--m=8" become "-m 8" so that
// single-letter flags (bench_gemm's --m/--n/--k) read naturally.
std::vector<std::string> normalize_single_letter_flags(int argc, char** argv);

// Old spellings kept working (bench_gemm's --passes for --pass, ...): parsed, not in --help.
inline constexpr const char* kAliasGroup = "Aliases";

// Parses argv; unknown flags, bad values and stray arguments become bad_input errors.
// Returns nullopt after printing help for --help.
// --version calls `print_version` and also returns nullopt.
std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& options, int argc,
                                                       char** argv,
                                                       const std::function<void()>& print_version);

// Whether a flag was given on the command line (as opposed to taking its default).
bool given(const cxxopts::ParseResult& parsed, const std::string& flag);

// One concept, one spelling in every binary (docs/inputs.md, "One flag vocabulary"): `flag` is
// that spelling, `alias` an older one or nccl-tests' (kept working). Returns the name the value
// was given under (`flag` when neither was: its default); both given is refused.
std::string flag_or_alias(const cxxopts::ParseResult& parsed, const std::string& flag,
                          const std::string& alias);

}  // namespace opbench
