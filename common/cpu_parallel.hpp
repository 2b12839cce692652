#pragma once
// Work spread over every core of the CPU, for the CPU providers that schedule their own tasks
// (attention tiles, grouped expert GEMMs, memory-bound loops).
#include <cstdint>
#include <functional>

namespace opbench {

// Runs work(item) for item in [0, items) on every core, dynamically balanced (items may differ in
// cost: causal tiles, experts with different token counts). BLAS calls inside run single-threaded
// (two BLAS thread pools on the same cores would fight); its thread count is restored afterwards.
// Where the system refuses threads (a container's pids limit), it runs on the threads it has, down
// to the caller alone.
void parallel_for(std::int64_t items, const std::function<void(std::int64_t)>& work);

// How many threads parallel_for uses for `items` items: at most the cores this process may run
// on (its affinity: `taskset`, an MPI launcher's binding, a cgroup's cpuset), as OpenBLAS does.
unsigned parallel_threads(std::int64_t items);
unsigned usable_cores();

// Sets the threads the CPU providers use, as a job will have them (bench_step --threads and
// --blas-threads): `threads` for our own loops (memory-bound operators, attention tiles),
// `blas_threads` for OpenBLAS's GEMMs; 0: the affinity mask's cores.
void limit_cpu_threads(unsigned threads, unsigned blas_threads);

}  // namespace opbench
