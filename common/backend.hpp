#pragma once
// --backend auto|cuda|cpu: which provider family runs. auto takes the GPU when this build has
// CUDA and a device is present, otherwise the CPU, and says which in one line on stderr.
#include <string>

namespace opbench {

enum class Backend { cpu, cuda };

struct BackendChoice {
  Backend backend = Backend::cpu;
  std::string reason;  // "CUDA device 0 found", "no CUDA device (cudaErrorNoDevice: ...)", ...
};

// Throws bad_input for an unknown name, or for cuda when this build or machine cannot run it.
BackendChoice choose_backend(const std::string& requested, int device);

bool built_with_cuda();

}  // namespace opbench
