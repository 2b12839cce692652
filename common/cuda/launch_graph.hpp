#pragma once
// Many launches of a short operation captured once into a CUDA graph and replayed as one: what
// a launch-bound case (one launch under ~20 µs) is timed with, so that neither the CPU's launch
// cost nor the events' resolution dominates the sample.
#include <cuda_runtime_api.h>

#include <functional>

namespace opbench {

class LaunchGraph {
 public:
  // Captures `count` calls of `enqueue_one(i)` on `stream`. Throws run_failure when the
  // operation cannot be captured (the caller then batches plain launches instead).
  LaunchGraph(cudaStream_t stream, int count, const std::function<void(int)>& enqueue_one);
  ~LaunchGraph();
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;

  void launch(cudaStream_t stream);
  int count() const { return count_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int count_ = 0;
};

}  // namespace opbench
