#include "common/env.hpp"

#include <cblas.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "common/cpu_parallel.hpp"
#include "common/error.hpp"
#include "common/host_allocator.hpp"
#include "common/owned_files.hpp"
#include "common/report.hpp"
#include "common/text.hpp"
#include "opbench_git_revision.h"

namespace opbench {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::uint64_t parse_cache_size(const std::string& text) {  // "32K", "266240K", "8M"
  if (text.empty()) return 0;
  std::uint64_t value = std::strtoull(text.c_str(), nullptr, 10);
  char unit = text.back();
  if (unit == 'K') value <<= 10;
  if (unit == 'M') value <<= 20;
  if (unit == 'G') value <<= 30;
  return value;
}

}  // namespace

std::string now_iso8601() {
  auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(now)));
}

std::string now_compact() {
  auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y%m%d-%H%M%S}", fmt::localtime(std::chrono::system_clock::to_time_t(now)));
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return std::string(trim(line.substr(line.find(':') + 1)));
  return "unknown CPU";
}

int online_cpus() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

std::uint64_t cpu_last_level_cache_bytes() {
  std::uint64_t largest = 0;
  for (int i = 0; i < 8; ++i) {
    auto dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}", i);
    if (!std::filesystem::exists(dir)) break;
    largest = std::max(largest, parse_cache_size(read_first_line(dir + "/size")));
  }
  return largest;
}

std::uint64_t cpu_cache_bytes_to_evict() {
  constexpr std::uint64_t kUnknownCache = std::uint64_t{64} << 20;
  if (const char* given = std::getenv("OPBENCH_CPU_CACHE_BYTES"); given && *given) {
    const std::string text(trim(given));
    const std::size_t end = text.find_first_not_of("0123456789");  // digits, then K, M or G
    const bool size =
        end > 0 && (end == std::string::npos ||
                    (end + 1 == text.size() &&
                     std::string_view("KMG").find(text[end]) != std::string_view::npos));
    const std::uint64_t bytes = size ? parse_cache_size(text) : 0;
    if (bytes == 0)
      throw bad_input(
          fmt::format("OPBENCH_CPU_CACHE_BYTES: '{}' is not a size in bytes (e.g. "
                      "33554432, 32768K, 32M)",
                      given));
    return bytes;
  }
  const std::uint64_t llc = cpu_last_level_cache_bytes();
  return llc > 0 ? llc : kUnknownCache;
}

std::uint64_t cpu_cache_flush_bytes() {
  return 2 * cpu_cache_bytes_to_evict();
}

std::uint64_t available_host_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::string openblas_version() {
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"
  std::string config = openblas_get_config();
  return fmt::format("{} ({} threads, core {})", config, openblas_get_num_threads(),
                     openblas_get_corename());
}

Environment::Environment(int argc, char** argv, std::string binary) {
  std::vector<std::string> args(argv, argv + argc);
  struct utsname u {};
  uname(&u);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  info_ = {
      {"binary", binary},
      {"opbench_version", OPBENCH_VERSION},
      {"git_revision", OPBENCH_GIT_REVISION},
      {"build_type", OPBENCH_BUILD_TYPE},
      {"compiler", fmt::format("{} {}", OPBENCH_COMPILER_ID, OPBENCH_COMPILER_VERSION)},
      {"command_line", join(args, " ")},
      {"run_id", fmt::format("{}-{}-{}", binary, now_compact(), getpid())},
      {"start_time", now_iso8601()},
      {"end_time", nullptr},
      {"outcome", nullptr},
      {"host", host},
      {"os", fmt::format("{} {} {}", u.sysname, u.release, u.machine)},
      {"cpu", cpu_model_name()},
      // The CPUs this process may run on (taskset, an MPI launcher's binding, a cgroup's cpuset):
      // what the CPU providers spread their work over, so what the timings were made with. The
      // host's online count beside it says when a run was confined to part of the machine.
      {"cpu_threads", static_cast<int>(usable_cores())},
      {"cpu_online", online_cpus()},
      {"cpu_last_level_cache_bytes", cpu_last_level_cache_bytes()},
      {"memory_available_bytes", available_host_memory_bytes()},
      {"libraries", {{"OpenBLAS", openblas_version()}}},
      {"devices", nlohmann::json::array()},
      {"host_allocator", host_allocator_record()},
      {"env", run_environment_variables()},
      {"launcher", launcher_command_line()},
  };
  set_output_owner(binary, run_id());
}

nlohmann::json run_environment_variables() {
  static constexpr std::string_view kPrefixes[] = {
      "NCCL_",  "CUDA_",    "CUBLAS",    "CUDNN_", "OMP_",    "UCX_",
      "OMPI_",  "SLURM_",   "OPENBLAS_", "GOTO_",  "MKL_",    "NVIDIA_",
      "TORCH_", "OPBENCH_", "FI_",       "HCOLL_", "MALLOC_", "GLIBC_TUNABLES"};
  nlohmann::json out = nlohmann::json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    bool wanted = name == "LD_LIBRARY_PATH" || name == "CUDA_VISIBLE_DEVICES";
    for (auto prefix : kPrefixes)
      wanted = wanted || name.substr(0, prefix.size()) == prefix;
    if (wanted) out[std::string(name)] = std::string(entry.substr(eq + 1));
  }
  return out;
}

nlohmann::json launcher_command_line() {
  std::ifstream in(fmt::format("/proc/{}/cmdline", getppid()), std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');)
    args.push_back(arg);
  if (args.empty()) return nullptr;
  const std::string launcher = std::filesystem::path(args[0]).filename().string();
  for (const char* known : {"mpirun", "mpiexec", "orterun", "prterun", "srun", "torchrun"})
    if (launcher == known) return join(args, " ");
  return nullptr;
}

void Environment::add_library(const std::string& name, const std::string& version) {
  info_["libraries"][name] = version;
}

void Environment::add_device(nlohmann::json device) {
  info_["devices"].push_back(std::move(device));
}

void Environment::write(const std::string& dir, bool finished) {
  if (finished) info_["end_time"] = now_iso8601();
  ensure_directory(dir);
  if (path_.empty()) {
    path_ = (std::filesystem::path(dir) / "environment.json").string();
    std::error_code ec;
    if (std::filesystem::exists(path_, ec) && !written_by_opbench(path_)) {
      const std::string mine =
          (std::filesystem::path(dir) / fmt::format("environment-{}.json", run_id())).string();
      std::fprintf(stderr,
                   "note: %s is not an opbench file: left as it is; this run's environment "
                   "goes to %s\n",
                   path_.c_str(), mine.c_str());
      path_ = mine;
    } else if (std::filesystem::exists(path_, ec)) {
      // Still here after the earlier runs were set aside: the run this one continues.
      std::ifstream in(path_);
      auto earlier = nlohmann::json::parse(in, nullptr, false);
      if (earlier.is_object() && earlier.value("run_id", "") != run_id()) {
        nlohmann::json runs = earlier.contains("earlier_runs") && earlier["earlier_runs"].is_array()
                                  ? earlier["earlier_runs"]
                                  : nlohmann::json::array();
        earlier.erase("earlier_runs");
        runs.push_back(std::move(earlier));
        info_["earlier_runs"] = std::move(runs);
      }
    }
  }
  claim_output(path_, OutputUse::continued);
  std::ofstream out(path_);
  out << info_.dump(2) << "\n";
  if (!out) throw run_failure(fmt::format("{}: cannot be written", path_));
}

}  // namespace opbench
