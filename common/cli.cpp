#include "common/cli.hpp"

#include <fmt/format.h>
#include <cxxopts.hpp>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>
#include <limits>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// Multiplier of a size suffix, or 0 when the suffix is not one.
std::uint64_t suffix_multiplier(std::string_view suffix) {
  std::string s = to_lower(suffix);
  if (s.empty() || s == "b") return 1;
  static constexpr std::string_view kUnits = "kmgt";
  std::size_t pos = kUnits.find(s[0]);
  if (pos == std::string_view::npos) return 0;
  std::string_view rest = std::string_view(s).substr(1);
  if (!(rest.empty() || rest == "b" || rest == "ib")) return 0;
  return std::uint64_t{1} << (10 * (pos + 1));
}

// The text between cxxopts' quotes in its messages: "Option ‘xyz’ does not exist" -> xyz.
std::string quoted_in(const std::string& what) {
  auto open = what.find("\xe2\x80\x98"), close = what.find("\xe2\x80\x99");  // ‘ and ’
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return what.substr(open + 3, close - open - 3);
}

}  // namespace

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  std::string_view t = trim(text);
  std::size_t split_at = 0;
  while (split_at < t.size() &&
         (std::isdigit(static_cast<unsigned char>(t[split_at])) || t[split_at] == '.'))
    ++split_at;
  std::string_view number = t.substr(0, split_at);
  std::uint64_t mult = suffix_multiplier(t.substr(split_at));
  auto fail = [&](std::string_view why) {
    return bad_input(
        fmt::format("{}: '{}' is not a size{} (examples: 4096, 64K, 1M, 2G)", what, text, why));
  };
  if (!t.empty() && t.front() == '-')
    throw bad_input(
        fmt::format("{}: '{}' is negative; a size or count must be positive", what, text));
  if (number.empty() || mult == 0) throw fail("");
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size()) throw fail("");
  long double bytes = static_cast<long double>(value) * mult;
  if (bytes > static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
    throw fail(": too large");
  if (bytes != std::floor(bytes)) throw fail(": not a whole number of bytes");
  return static_cast<std::uint64_t>(bytes);
}

std::int64_t parse_positive_int(std::string_view text, std::string_view what) {
  std::uint64_t v = parse_size(text, what);
  if (v == 0) throw bad_input(fmt::format("{}: must be at least 1, got '{}'", what, text));
  return static_cast<std::int64_t>(v);
}

std::vector<std::int64_t> parse_int_list(std::string_view text, std::string_view what) {
  std::vector<std::int64_t> out;
  for (const auto& item : split(text, ',')) {
    auto parts = split(item, ':');
    if (item.find(':') == std::string::npos) {
      out.push_back(parse_positive_int(item, what));
      continue;
    }
    if (parts.size() < 2 || parts.size() > 3 ||
        std::count(item.begin(), item.end(), ':') != static_cast<long>(parts.size()) - 1)
      throw bad_input(fmt::format("{}: '{}' is not a range start:stop[:step]", what, item));
    std::int64_t start = parse_positive_int(parts[0], what);
    std::int64_t stop = parse_positive_int(parts[1], what);
    if (stop < start)
      throw bad_input(fmt::format("{}: range '{}' ends before it starts", what, item));
    if (parts.size() == 3 && !parts[2].empty() && (parts[2][0] == 'x' || parts[2][0] == 'X')) {
      // A geometric range, "1K:1G:x2": each value the one before times the factor.
      const std::int64_t factor = parse_positive_int(std::string_view(parts[2]).substr(1), what);
      if (factor < 2)
        throw bad_input(fmt::format("{}: range '{}' needs a factor of at least x2", what, item));
      for (std::int64_t v = start; v <= stop; v *= factor) {
        out.push_back(v);
        if (v > stop / factor) break;  // the next value would pass stop (or overflow)
      }
      continue;
    }
    std::int64_t step = parts.size() == 3 ? parse_positive_int(parts[2], what) : 1;
    if ((stop - start) / step >= 100000)
      throw bad_input(fmt::format("{}: range '{}' has more than 100000 values", what, item));
    for (std::int64_t v = start; v <= stop; v += step)
      out.push_back(v);
  }
  if (out.empty()) throw bad_input(fmt::format("{}: empty list", what));
  // Each value once (common/list_items.hpp); sorted, as ranges may hold 100000 values.
  std::vector<std::int64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end())
    throw bad_input(
        fmt::format("{}: {} is listed twice (in '{}'); list each value once", what, *twice, text));
  return out;
}

void add_measure_options(cxxopts::Options& options, const std::vector<MeasureDefaults>& profiles,
                         bool with_warmup) {
  // Each flag's help lists this binary's own defaults, read from the options it will resolve.
  std::vector<std::string> names;
  for (const auto& p : profiles)
    names.push_back(p.name);
  auto defaults = [&](const char* what, auto field) {
    std::vector<std::string> values;
    for (const auto& p : profiles)
      values.push_back(fmt::format("{}", p.options.*field));
    return fmt::format("{} ({})", what, fmt::join(values, " / "));
  };
  auto add = options.add_options(
      fmt::format("Measurement (defaults: {}; README, \"Measurement\")", fmt::join(names, " / ")));
  if (with_warmup)
    add("warmup", defaults("warm-up runs before sampling, at least", &MeasureOptions::warmup_iters),
        cxxopts::value<int>())(
        "warmup-time",
        defaults("warm-up seconds before sampling, at least", &MeasureOptions::warmup_time_s),
        cxxopts::value<double>());
  add("min-samples", defaults("timed samples per case, at least", &MeasureOptions::min_samples),
      cxxopts::value<int>())(
      "max-samples", defaults("timed samples per case, at most", &MeasureOptions::max_samples),
      cxxopts::value<int>())(
      "min-time", defaults("seconds of sampling per case, at least", &MeasureOptions::min_time_s),
      cxxopts::value<double>())(
      "max-time",
      defaults("seconds of sampling per case, at most; the row says 'noisy' if it stops here",
               &MeasureOptions::max_time_s),
      cxxopts::value<double>())(
      "max-noise",
      defaults("stop once the relative standard error of the mean is below this",
               &MeasureOptions::max_noise),
      cxxopts::value<double>());
}

MeasureOverrides read_measure_overrides(const cxxopts::ParseResult& p, bool with_warmup) {
  MeasureOverrides v;
  auto get_int = [&](const char* flag, std::optional<int>& out) {
    if (p.count(flag)) out = p[flag].as<int>();
  };
  auto get_double = [&](const char* flag, std::optional<double>& out) {
    if (p.count(flag)) out = p[flag].as<double>();
  };
  if (with_warmup) {
    get_int("warmup", v.warmup_iters);
    get_double("warmup-time", v.warmup_time_s);
  }
  get_int("min-samples", v.min_samples);
  get_int("max-samples", v.max_samples);
  get_double("min-time", v.min_time_s);
  get_double("max-time", v.max_time_s);
  get_double("max-noise", v.max_noise);
  // Range errors name the flag now, before any backend is chosen.
  resolve(MeasureProfile::cpu, v);
  return v;
}

void add_report_options(cxxopts::Options& options, std::string_view binary, bool resumable) {
  // clang-format off
  options.add_options("Report")
    ("report-dir-path", fmt::format("directory for CSV, JSON lines and environment.json (default reports/{}-<date>-<time>)", binary), cxxopts::value<std::string>())
    ("format", "report formats: csv, jsonl, prom (Prometheus textfile)", cxxopts::value<std::string>()->default_value("csv,jsonl"))
    ("summary-path", "also write a Markdown summary (environment, best results, problems) here", cxxopts::value<std::string>())
    ("quiet", "no progress lines on stderr");
  // clang-format on
  if (resumable)
    options.add_options("Report")(
        "resume",
        "continue the reports in --report-dir-path: cases they already hold are not run again");
}

ReportOptions read_report_options(const cxxopts::ParseResult& p) {
  ReportOptions r;
  r.quiet = p.count("quiet") > 0;
  r.formats = parse_report_formats(p["format"].as<std::string>());
  r.formats_given = p.count("format") > 0;
  if (p.count("summary-path")) r.summary_path = p["summary-path"].as<std::string>();
  r.resume = p.count("resume") > 0;
  if (p.count("report-dir-path")) {
    r.report_dir = p["report-dir-path"].as<std::string>();
    if (r.report_dir.empty()) throw bad_input("--report-dir-path: empty path");
  }
  if (r.resume && r.report_dir.empty())
    throw bad_input("--resume needs the --report-dir-path of the run to continue");
  return r;
}

void add_peak_options(cxxopts::Options& options, PeakFlags which) {
  auto group = options.add_options("Peaks");
  if (which.tflops)
    group("peak-tflops", "peak TFLOPS used for pct_peak_flops (overrides configs/hardware.json)",
          cxxopts::value<double>());
  if (which.bandwidth)
    group("peak-bw", "peak memory bandwidth in GB/s (overrides configs/hardware.json)",
          cxxopts::value<double>());
  group("hardware-config-path", "hardware table (default configs/hardware.json)",
        cxxopts::value<std::string>());
}

PeakOverrides read_peak_options(const cxxopts::ParseResult& p, PeakFlags which) {
  PeakOverrides o;
  auto positive = [&](const char* flag) -> std::optional<double> {
    if (!p.count(flag)) return std::nullopt;
    double v = p[flag].as<double>();
    if (!(v > 0) || !std::isfinite(v))
      throw bad_input(fmt::format("--{}: must be a positive number, got {}", flag, v));
    return v;
  };
  if (which.tflops) o.peak_tflops = positive("peak-tflops");
  if (which.bandwidth) o.peak_bw_gbps = positive("peak-bw");
  if (p.count("hardware-config-path"))
    o.hardware_config_path = p["hardware-config-path"].as<std::string>();
  return o;
}

std::vector<std::string> normalize_single_letter_flags(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool single = i > 0 && a.size() >= 3 && a.rfind("--", 0) == 0 &&
                  std::isalpha(static_cast<unsigned char>(a[2])) && (a.size() == 3 || a[3] == '=');
    if (!single) {
      out.push_back(a);
      continue;
    }
    out.push_back("-" + a.substr(2, 1));
    if (a.size() > 3) out.push_back(a.substr(4));
  }
  return out;
}

std::optional<cxxopts::ParseResult> parse_command_line(cxxopts::Options& options, int argc,
                                                       char** argv,
                                                       const std::function<void()>& print_version) {
  options.add_options("Help")("h,help", "print this help")(
      "version", "print the versions of opbench and its libraries");
  try {
    auto args = normalize_single_letter_flags(argc, argv);
    std::vector<char*> pointers;
    for (auto& a : args)
      pointers.push_back(a.data());
    auto parsed = options.parse(static_cast<int>(pointers.size()), pointers.data());
    if (parsed.count("help")) {
      std::vector<std::string> shown;  // every group but the old spellings kept as aliases
      for (const auto& group : options.groups())
        if (group != kAliasGroup) shown.push_back(group);
      std::cout << options.help(shown) << std::endl;
      return std::nullopt;
    }
    if (parsed.count("version")) {
      print_version();
      return std::nullopt;
    }
    if (!parsed.unmatched().empty())
      throw bad_input(
          fmt::format("unexpected argument '{}' (see --help)", parsed.unmatched().front()));
    return parsed;
  } catch (const cxxopts::exceptions::no_such_option& e) {
    const std::string flag = quoted_in(e.what());
    std::vector<std::string> known;
    for (const auto& group : options.groups())
      for (const auto& option : options.group_help(group).options)
        for (const auto& name : option.l)
          known.push_back(name);
    const std::string near = closest_match(flag, known);
    throw bad_input(fmt::format("unknown flag '{}{}'{} (see --help)", flag.size() > 1 ? "--" : "-",
                                flag,
                                near.empty() ? "" : fmt::format("; did you mean --{}?", near)));
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    // cxxopts says "Argument 'nan' failed to parse" without the flag; find which flag got it.
    const std::string what = e.what(), value = quoted_in(what);
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (i > 1 && a == value && std::string(argv[i - 1]).rfind("-", 0) == 0)
        throw bad_input(
            fmt::format("{}: '{}' is not a valid value (see --help)", argv[i - 1], value));
      if (auto eq = a.find('='); eq != std::string::npos && a.substr(eq + 1) == value)
        throw bad_input(
            fmt::format("{}: '{}' is not a valid value (see --help)", a.substr(0, eq), value));
    }
    throw bad_input(fmt::format("{} (see --help)", what));
  } catch (const cxxopts::exceptions::exception& e) {
    throw bad_input(fmt::format("{} (see --help)", e.what()));
  }
}

bool given(const cxxopts::ParseResult& parsed, const std::string& flag) {
  return parsed.count(flag) > 0;
}

std::string flag_or_alias(const cxxopts::ParseResult& parsed, const std::string& flag,
                          const std::string& alias) {
  if (given(parsed, flag) && given(parsed, alias))
    throw bad_input(
        fmt::format("--{} and --{} are one flag (--{} is its other spelling): give it "
                    "once",
                    flag, alias, alias));
  return given(parsed, alias) ? alias : flag;
}

}  // namespace opbench
