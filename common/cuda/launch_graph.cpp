#include "common/cuda/launch_graph.hpp"

#include "common/cuda/check.hpp"

namespace opbench {

LaunchGraph::LaunchGraph(cudaStream_t stream, int count,
                         const std::function<void(int)>& enqueue_one)
    : count_(count) {
  OPBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < count; ++i)
      enqueue_one(i);
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream, &partial);  // leave the stream usable
    if (partial) cudaGraphDestroy(partial);
    throw;
  }
  OPBENCH_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
  OPBENCH_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

LaunchGraph::~LaunchGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void LaunchGraph::launch(cudaStream_t stream) {
  OPBENCH_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

}  // namespace opbench
