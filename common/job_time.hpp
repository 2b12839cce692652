#pragma once
// A captured shape's time in the job, for the capture library's own table (capture/table.hpp)
// and for the readers of its files (common/capture_tables.cpp; scripts/capture_summary.py keeps
// a Python copy): its timed calls' total, and the calls the GPU sampling left untimed at the
// timed calls' mean (they ran; only their events were spared). Calls untimed for another reason
// (made inside a graph capture, enqueued later by NCCL, ...) are not guessed at. Header-only:
// the preloaded capture library links nothing of opbench_common.
#include <cstdint>

namespace opbench {

inline double job_time_us(double total_us, std::uint64_t timed_calls,
                          std::uint64_t not_sampled_calls) {
  if (timed_calls == 0 || not_sampled_calls == 0) return total_us;
  return total_us +
         total_us / static_cast<double>(timed_calls) * static_cast<double>(not_sampled_calls);
}

}  // namespace opbench
