#pragma once
// From a finalized cuDNN operation graph to the engines that run it, on a real GPU (a handle)
// or on a device description (a CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR made from a JSON profile,
// no GPU needed). The same code serves the provider's plan choice and the dry run's report of
// which engines accept a graph, so both give cuDNN's own reasons when none does — including
// those cuDNN writes only to its log (captured with cudnnSetCallback).
//
// Without a GPU, cuDNN still needs a loadable libcuda.so.1 to enumerate its engines; the CUDA
// toolkit's stub library serves (see load_cuda_driver_or_stub). With the stub, a plan's
// finalize stops when it loads the kernel (CUDA error 34, "stub library"): everything before
// that line is cuDNN checking the graph, so an engine that gets that far accepts it.
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cudnn/cudnn_backend.hpp"

namespace opbench {

// Where plans are made: a cuDNN handle on a real device, or a device description.
struct CudnnTarget {
  cudnnHandle_t handle = nullptr;
  const BackendDescriptor* device = nullptr;  // CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, finalized
};

// A finalized device description from cuDNN's JSON representation of a device (the "device"
// object of a profile in configs/cudnn_devices.json). Throws run_failure with cuDNN's message.
Descriptor make_device_description(const std::string& json);

// Collects cuDNN's error and warning messages while alive (cuDNN's callback is process-wide, so
// one capture at a time). `reason()` gives the messages that explain a refusal, one line.
class CudnnLogCapture {
 public:
  CudnnLogCapture();
  ~CudnnLogCapture();
  CudnnLogCapture(const CudnnLogCapture&) = delete;
  CudnnLogCapture& operator=(const CudnnLogCapture&) = delete;
  const std::vector<std::string>& messages() const { return messages_; }
  // cuDNN's "Reason:" clauses, deduplicated, joined with "; " (or the last message's first line).
  std::string reason() const;
  void clear() { messages_.clear(); }

 private:
  static void on_message(cudnnSeverity_t, void*, const cudnnDebug_t*, const char*);
  std::vector<std::string> messages_;
  unsigned old_mask_ = 0;
  void* old_data_ = nullptr;
  cudnnCallback_t old_fn_ = nullptr;
};

// What explains a refusal in cuDNN's log records: the innermost "Reason:" of each error stack
// ("Embedding dim per head ... at: d_qk > 256"), prefixed with its engine, each once.
std::string cudnn_log_reason(const std::vector<std::string>& records);

// One engine configuration the heuristics offered, and what became of it.
struct EngineVerdict {
  std::int64_t engine = -1;
  std::string knobs;      // "KERNEL_CFG=26 STAGES=-1": cudnnBackendKnobType_t names and values
  bool accepted = false;  // the plan finalized (or stopped only at kernel loading, with the stub)
  std::string refusal;    // cuDNN's message when not accepted
};

// The heuristics' configurations (mode A, at most `max_configs`) for `graph` on `target`;
// `offered` gets how many cuDNN had in all. Throws run_failure with cuDNN's reason when the
// heuristics refuse the graph.
std::vector<Descriptor> heuristic_configs(const BackendDescriptor& graph, const CudnnTarget& target,
                                          int max_configs, std::int64_t* offered);
// An execution plan for `config` on `target`. Throws run_failure with cuDNN's message.
Descriptor make_plan(const BackendDescriptor& config, const CudnnTarget& target);
// The device memory a finalized plan needs beside its operands
// (CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE).
std::int64_t plan_workspace_bytes(const BackendDescriptor& plan);
std::int64_t engine_index(const BackendDescriptor& config);
std::string engine_knobs(const BackendDescriptor& config);
// Whether a plan failure is the stub library's refusal to load a kernel (CUDA error 34).
bool stopped_at_kernel_loading(const std::string& message);

// The configurations tried on `target` in the heuristics' order, accepted or refused with cuDNN's
// words, until `enough_accepted` of them accept (each plan finalize compiles the engine's kernel,
// about half a second for the runtime-compiled flash engines).
std::vector<EngineVerdict> survey_configs(const std::vector<Descriptor>& configs,
                                          const CudnnTarget& target, int enough_accepted);

// Makes libcuda.so.1 loadable for cuDNN: the driver's when there is one, else the CUDA
// toolkit's stub (found beside the toolkit this binary was built with, or $CUDA_HOME). Only for
// a dry run — the stub runs nothing. Returns what was loaded ("driver", "toolkit stub PATH") or
// throws run_failure saying what is missing.
std::string load_cuda_driver_or_stub();

}  // namespace opbench
