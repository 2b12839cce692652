#include "common/cpu_parallel.hpp"

#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace opbench {

namespace {
std::atomic<unsigned> thread_cap{0};  // limit_cpu_threads; 0: none
}  // namespace

void limit_cpu_threads(unsigned threads, unsigned blas_threads) {
  thread_cap = threads;
  openblas_set_num_threads(static_cast<int>(blas_threads > 0 ? blas_threads : usable_cores()));
}

unsigned usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned parallel_threads(std::int64_t items) {
  const unsigned cap = thread_cap.load();
  const unsigned cores = cap > 0 ? cap : usable_cores();
  return static_cast<unsigned>(std::clamp<std::int64_t>(items, 1, cores));
}

void parallel_for(std::int64_t items, const std::function<void(std::int64_t)>& work) {
  const int saved = openblas_get_num_threads();
  openblas_set_num_threads(1);
  std::atomic<std::int64_t> next{0};
  auto worker = [&] {
    for (std::int64_t i = next++; i < items; i = next++)
      work(i);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < parallel_threads(items); ++t)
    threads.emplace_back(worker);
  worker();
  for (auto& t : threads)
    t.join();
  openblas_set_num_threads(saved);
}

}  // namespace opbench
