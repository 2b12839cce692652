#pragma once
// --backend auto|cuda|cpu: which provider family runs. auto takes the GPU when this build has
// CUDA and a device is present, otherwise the CPU, and says which in one line on stderr.
#include <string>

#include "common/dtype.hpp"
#include "common/measure.hpp"

namespace opbench {

enum class Backend { cpu, cuda };

// What a backend brings to every family, written once: its name, the kind of device it runs on,
// the measurement defaults (the stop rule's profile) and the dtype a run takes by default. A new
// backend is a row here, a probe in choose_backend and a row in each family's provider table
// (gemm/gemm_run.cpp, attention/attention_providers.cpp, memops/memop_run.cpp).
struct BackendTraits {
  Backend backend;
  const char* name;         // "cpu", "cuda": --backend's word
  const char* device_kind;  // "CPU", "GPU", for people
  MeasureProfile profile;
  DType default_dtype;  // fp32 on the CPU (its providers compute in fp32), bf16 on a GPU
};
const BackendTraits& backend_traits(Backend b);

struct BackendChoice {
  Backend backend = Backend::cpu;
  std::string reason;  // "CUDA device 0 found", "no CUDA device (cudaErrorNoDevice: ...)", ...
};

// Throws bad_input for an unknown name, or for cuda when this build or machine cannot run it.
BackendChoice choose_backend(const std::string& requested, int device);

bool built_with_cuda();

}  // namespace opbench
