// The CPU's memory bandwidth roof: the best of a small set of streaming loops over every core,
// counted as the operators are counted (docs/formulas.md, "Memory-bound operators").
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/cpu_parallel.hpp"
#include "common/env.hpp"
#include "common/rotation.hpp"
#include "common/timer.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {
namespace {

// One loop of the set: the bytes it must move per element (reads and writes once, no
// write-allocate), and its body over [begin, end).
struct RoofLoop {
  const char* name;
  double bytes_per_element;
  std::function<void(double* a, const double* b, const double* c, std::int64_t begin,
                     std::int64_t end)>
      body;
};

}  // namespace

CpuMemoryRoof measure_cpu_memory_roof(int repeats) {
  // Each array at least 4x the cache the operators' rotation defeats (STREAM's rule), so every
  // pass streams from memory as their samples do: the last-level cache, or
  // OPBENCH_CPU_CACHE_BYTES where set (cpu_cache_bytes_to_evict), so that a roof and the rows
  // measured against it see the same cache; never under 64 MiB; within 60% of the available
  // memory, as the operators' rotation is.
  constexpr std::uint64_t kFloor = std::uint64_t{64} << 20;
  std::uint64_t bytes = std::max(4 * cpu_cache_bytes_to_evict(), kFloor);
  const std::uint64_t budget = host_memory_budget();
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
  // STREAM's four (copy, scale, add, triad: each write to a line not read, so the CPU reads it
  // first, write-allocate, which they do not count), and two as likwid-bench has them without
  // write-allocate: a read-only sum and an in-place update, whose writes go to lines just read,
  // as the in-place operators' (AdamW's p, m, v) do. An operator reaches at most what the best of
  // them reaches, so its share of the roof stays within 100%.
  constexpr double s = 3.0;
  std::vector<double> sums(static_cast<std::size_t>(tasks), 0.0);
  double* partial = sums.data();
  const RoofLoop loops[] = {
      {"copy", 16,
       [](double* x, const double* y, const double*, std::int64_t i0, std::int64_t i1) {
         for (std::int64_t i = i0; i < i1; ++i)
           x[i] = y[i];
       }},
      {"scale", 16,
       [](double* x, const double* y, const double*, std::int64_t i0, std::int64_t i1) {
         for (std::int64_t i = i0; i < i1; ++i)
           x[i] = s * y[i];
       }},
      {"add", 24,
       [](double* x, const double* y, const double* z, std::int64_t i0, std::int64_t i1) {
         for (std::int64_t i = i0; i < i1; ++i)
           x[i] = y[i] + z[i];
       }},
      {"triad", 24,
       [](double* x, const double* y, const double* z, std::int64_t i0, std::int64_t i1) {
         for (std::int64_t i = i0; i < i1; ++i)
           x[i] = y[i] + s * z[i];
       }},
      {"read", 8,
       [=](double*, const double* y, const double*, std::int64_t i0, std::int64_t i1) {
         double sum = 0;
         for (std::int64_t i = i0; i < i1; ++i)
           sum += y[i];
         partial[i0 / kChunk] += sum;  // kept, so the loop is not optimised away
       }},
      {"update", 16,
       [](double* x, const double*, const double*, std::int64_t i0, std::int64_t i1) {
         for (std::int64_t i = i0; i < i1; ++i)
           x[i] = s * x[i];
       }},
  };
  CpuMemoryRoof roof;
  for (const RoofLoop& loop : loops) {
    double best_s = 0;
    for (int r = 0; r < std::max(1, repeats); ++r) {
      CpuTimer timer;
      parallel_for(tasks, [&](std::int64_t t) {
        loop.body(a, b, c, t * kChunk, std::min(n, (t + 1) * kChunk));
      });
      const double elapsed = timer.elapsed_s();
      if (r == 0 || elapsed < best_s) best_s = elapsed;
    }
    const double gbps =
        best_s > 0 ? loop.bytes_per_element * static_cast<double>(n) / best_s * 1e-9 : 0.0;
    roof.loops.emplace_back(loop.name, gbps);
    if (gbps > roof.gbps) {
      roof.gbps = gbps;
      roof.best = loop.name;
    }
  }
  return roof;
}

}  // namespace opbench
