#pragma once
// What NCCL can do in this job, and how bench_ccl lays out its calls, decided on the host so it
// is tested without a GPU. Header-only and free of NCCL's headers.
#include <cstddef>
#include <optional>
#include <string>

#include "common/version.hpp"

namespace opbench {

// fp8 types exist in NCCL from 2.24.0 (ncclFloat8e4m3, ncclFloat8e5m2), and NCCL reduces them
// on compute capability 9.0 and newer only — every rank's, so the lowest across the ranks
// decides (`min_cc` = major·10 + minor). Why a call cannot run, or nullopt.
inline std::optional<std::string> nccl_fp8_refusal(int nccl_version, int min_cc, bool reduces) {
  if (nccl_version < 22400)
    return "fp8 collectives need NCCL 2.24.0 or newer at run time; this job runs " +
           version_from_int(nccl_version);
  if (reduces && min_cc < 90)
    return "NCCL reduces fp8 on compute capability 9.0 and newer; the lowest among the ranks is " +
           std::to_string(min_cc / 10) + "." + std::to_string(min_cc % 10);
  return std::nullopt;
}

// ncclConfig_t.nvlinkCentricSched (NCCL 2.28 and newer), set as nccl-tests sets it: it changes
// how kernels are scheduled on NVLink-heavy systems (B200, GB200), and so their figures.
inline bool nccl_has_nvlink_centric_sched(int nccl_version) {
  return nccl_version >= 22800;
}

// Where call `iteration` starts inside buffers of `capacity` bytes, for calls of `call_bytes`
// (max of send and receive): each iteration takes the next slice, as nccl-tests does (buffers
// sized for the largest size of the sweep), so small calls do not re-read a cached slice.
inline std::size_t rotation_offset(std::size_t call_bytes, std::size_t capacity, long iteration) {
  if (call_bytes == 0 || capacity < call_bytes) return 0;
  const std::size_t steps = capacity / call_bytes;
  return call_bytes * (static_cast<std::size_t>(iteration) % steps);
}

}  // namespace opbench
