#pragma once
// What a run ran on: host, CPU, memory, OS, compiler, library versions, devices, command line,
// git revision, start and end time. Written as environment.json next to every report.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace opbench {

class Environment {
 public:
  // Captures the host facts and the start time.
  Environment(int argc, char** argv, std::string binary);

  void add_library(const std::string& name, const std::string& version);
  void add_device(nlohmann::json device);
  void set(const std::string& key, nlohmann::json value) { info_[key] = std::move(value); }
  const nlohmann::json& json() const { return info_; }
  std::string run_id() const { return info_["run_id"]; }

  // Writes environment.json into `dir` (again at the end, with end_time filled in). A run that
  // continues an earlier one (--resume) keeps that run's environment, and those it continued, in
  // `earlier_runs`, so every run_id of the reports' rows resolves. When environment.json in `dir`
  // is not an opbench file, it stays as it is and this run's goes to environment-<run_id>.json.
  void write(const std::string& dir, bool finished);
  // The file written (empty before the first write).
  const std::string& path() const { return path_; }

 private:
  nlohmann::json info_;
  std::string path_;
};

// The environment variables that shape a run (NCCL_*, CUDA_*, OMP_*, UCX_*, OMPI_*, SLURM_*,
// OPENBLAS_*, ...; not the launcher's internal PMIX_* wiring), as {name: value}.
nlohmann::json run_environment_variables();
// The command line that launched this process when its parent is a launcher (mpirun, mpiexec,
// srun, ...), read from /proc; else null (a rank on another node sees only the daemon).
nlohmann::json launcher_command_line();

std::string now_iso8601();
std::string now_compact();  // 20261121-094012, for folder names

std::string cpu_model_name();
// The CPUs online on the host, whatever this process may run on (that is usable_cores(),
// common/cpu_parallel.hpp).
int online_cpus();
// Size of the largest CPU cache (sysfs), or 0 when unknown.
std::uint64_t cpu_last_level_cache_bytes();
// The cache that rotation and flushes must defeat: the last-level cache, or 64 MiB where sysfs
// does not say (some VMs, Firecracker's among them, have no cache entries at all; CPUID's figure
// there can be the host's whole L3, 508 MiB on this project's CI machine, where one core sees
// about 32 MiB). Without a figure, operands would never rotate and every operator that fits the
// cache would be timed from it. OPBENCH_CPU_CACHE_BYTES (bytes, or with K, M or G) overrides
// both: where the core's real share is known, or to keep a test's operand sets small.
std::uint64_t cpu_cache_bytes_to_evict();
// What --cold writes between samples to evict the CPU's caches: twice the last-level cache, or
// twice 64 MiB where sysfs does not say (some VMs have no cache entries at all).
std::uint64_t cpu_cache_flush_bytes();
// MemAvailable from /proc/meminfo, or 0 when unknown.
std::uint64_t available_host_memory_bytes();
std::string openblas_version();

}  // namespace opbench
