#include "common/cuda/launch_graph.hpp"

#include "common/cuda/check.hpp"

namespace opbench {
namespace {

// A failed capture leaves its error pending on the thread, and the stream possibly still in
// capture mode; both would make the caller's plain-launch fallback fail too. Ends any capture,
// frees what it made, and clears the pending error.
void abandon_capture(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream, &partial);
    if (partial) cudaGraphDestroy(partial);
  }
  cudaGetLastError();
}

}  // namespace

LaunchGraph::LaunchGraph(cudaStream_t stream, int count,
                         const std::function<void(int)>& enqueue_one)
    : count_(count) {
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    abandon_capture(stream);
    throw_cuda_error(err, "cudaStreamBeginCapture", __FILE__, __LINE__);
  }
  try {
    for (int i = 0; i < count; ++i)
      enqueue_one(i);
  } catch (...) {
    abandon_capture(stream);
    throw;
  }
  err = cudaStreamEndCapture(stream, &graph_);
  if (err != cudaSuccess) {
    if (graph_) cudaGraphDestroy(graph_);
    graph_ = nullptr;
    abandon_capture(stream);
    throw_cuda_error(err, "cudaStreamEndCapture", __FILE__, __LINE__);
  }
  err = cudaGraphInstantiate(&exec_, graph_, 0);
  if (err != cudaSuccess) {
    cudaGraphDestroy(graph_);
    graph_ = nullptr;
    exec_ = nullptr;
    cudaGetLastError();
    throw_cuda_error(err, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
}

LaunchGraph::~LaunchGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void LaunchGraph::launch(cudaStream_t stream) {
  OPBENCH_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

}  // namespace opbench
