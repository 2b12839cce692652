#pragma once
// Every parameter tensor of a model, as the framework holds them (Hugging Face module layout),
// grouped by the module that owns it: what FSDP flattens and shards.
#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.hpp"

namespace opbench {

struct ParamTensor {
  std::string name;                 // "q_proj.weight"
  std::vector<std::int64_t> shape;  // dim 0 first, as FSDP2 shards it
  std::int64_t numel() const;
  std::int64_t dim0() const { return shape.front(); }
};

// Elements in a set of tensors.
std::int64_t total_numel(const std::vector<ParamTensor>& params);

// The parameters of one module: "attention", "mlp", "moe", "norms", "embedding", ...
struct ModuleParams {
  std::string name;
  std::vector<ParamTensor> params;
  std::int64_t numel() const { return total_numel(params); }
};

// The modules of one decoder layer. Layers of a model differ only between dense and MoE layers
// (DeepSeek's first_k_dense_replace).
std::vector<ModuleParams> decoder_layer_modules(const ModelConfig& m, bool moe_layer);
// The embedding (and learned positions), the final norm and the LM head (absent when tied).
std::vector<ModuleParams> root_modules(const ModelConfig& m);

}  // namespace opbench
