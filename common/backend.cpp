#include "common/backend.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "common/error.hpp"
#include "common/text.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include "common/cuda/device.hpp"
#endif

namespace opbench {

const BackendTraits& backend_traits(Backend b) {
  static const BackendTraits table[] = {
      {Backend::cpu, "cpu", "CPU", MeasureProfile::cpu, DType::fp32},
      {Backend::cuda, "cuda", "GPU", MeasureProfile::gpu, DType::bf16},
  };
  for (const auto& t : table)
    if (t.backend == b) return t;
  throw std::logic_error("a backend without traits");
}

bool built_with_cuda() {
#ifdef OPBENCH_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

BackendChoice choose_backend(const std::string& requested, int device) {
  std::string want = to_lower(requested);
  if (want != "auto" && want != "cuda" && want != "cpu")
    throw bad_input(
        fmt::format("--backend: unknown backend '{}' (accepted: auto, cuda, cpu)", requested));
  if (want == "cpu") return {Backend::cpu, "requested with --backend cpu"};
  std::string why = "this build has no CUDA support";
#ifdef OPBENCH_HAVE_CUDA
  int count = cuda_device_count(&why);
  if (count > 0) {
    if (device < 0 || device >= count)
      throw bad_input(
          fmt::format("--device {}: this machine has {} CUDA device(s)", device, count));
    return {Backend::cuda, fmt::format("CUDA device {} of {}", device, count)};
  }
#else
  (void)device;
#endif
  if (want == "cuda") throw bad_input(fmt::format("--backend cuda: no usable GPU ({})", why));
  return {Backend::cpu, fmt::format("no GPU: {}", why)};
}

}  // namespace opbench
