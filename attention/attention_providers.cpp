// The attention providers of each backend, the first its default: cuDNN's fused SDPA on a GPU;
// on the CPU our blocked flash-style kernel, or the naive fp64 reference.
#include "attention/attention_provider.hpp"
#include "common/provider_registry.hpp"

namespace opbench {
namespace {

const ProviderTable<AttentionProvider>& attention_providers() {
  static const ProviderTable<AttentionProvider> table{
      {Backend::cuda, "cudnn", OPBENCH_CUDA_PROVIDER(make_cudnn_attention_provider)},
      {Backend::cpu, "blocked", [](int) { return make_cpu_attention_provider("blocked"); }},
      {Backend::cpu, "reference", [](int) { return make_cpu_attention_provider("reference"); }},
  };
  return table;
}

}  // namespace

std::unique_ptr<AttentionProvider> make_attention_provider(Backend backend, const std::string& name,
                                                           int device) {
  return make_registered(attention_providers(), backend, name, device);
}

}  // namespace opbench
