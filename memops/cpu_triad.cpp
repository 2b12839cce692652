// The CPU's memory bandwidth roof: STREAM's triad, a = b + s c in fp64, over every core.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "common/cpu_parallel.hpp"
#include "common/env.hpp"
#include "common/timer.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {

double measure_cpu_triad_gbps(int repeats) {
  // Each array at least 4x the last-level cache (STREAM's rule), so every pass streams from
  // memory; 64 MiB when the cache size is unknown; within 60% of the available memory, as the
  // operators' rotation is.
  constexpr std::uint64_t kFallback = std::uint64_t{64} << 20;
  const std::uint64_t llc = cpu_last_level_cache_bytes();
  std::uint64_t bytes = std::max(4 * llc, kFallback);
  const std::uint64_t budget = available_host_memory_bytes() / 10 * 6;
  if (budget > 0) bytes = std::min(bytes, budget / 3);
  const auto n = static_cast<std::int64_t>(std::max<std::uint64_t>(bytes / sizeof(double), 1024));
  // Left uninitialised by new[] (HostBuffer would zero gigabytes on one core): the first touch
  // below, over every core, maps the pages in parallel, each core the pages it streams later.
  const std::unique_ptr<double[]> a_buf(new double[static_cast<std::size_t>(n)]);
  const std::unique_ptr<double[]> b_buf(new double[static_cast<std::size_t>(n)]);
  const std::unique_ptr<double[]> c_buf(new double[static_cast<std::size_t>(n)]);
  double* a = a_buf.get();
  double* b = b_buf.get();
  double* c = c_buf.get();

  constexpr std::int64_t kChunk = 65536;  // elements a task: 512 KiB of each array
  const std::int64_t tasks = (n + kChunk - 1) / kChunk;
  parallel_for(tasks, [=](std::int64_t t) {
    for (std::int64_t i = t * kChunk; i < std::min(n, (t + 1) * kChunk); ++i) {
      a[i] = 0.0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
  });
  const double s = 3.0;
  double best_s = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    CpuTimer timer;
    parallel_for(tasks, [=](std::int64_t t) {
      double* __restrict as = a;
      const double* __restrict bs = b;
      const double* __restrict cs = c;
      const std::int64_t end = std::min(n, (t + 1) * kChunk);
      for (std::int64_t i = t * kChunk; i < end; ++i)
        as[i] = bs[i] + s * cs[i];
    });
    const double elapsed = timer.elapsed_s();
    if (r == 0 || elapsed < best_s) best_s = elapsed;
  }
  // STREAM counts 24 bytes an element (read b and c, write a), not the write-allocate read of a.
  return best_s > 0 ? 24.0 * static_cast<double>(n) / best_s * 1e-9 : 0.0;
}

}  // namespace opbench
