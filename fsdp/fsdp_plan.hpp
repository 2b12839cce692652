#pragma once
// The FSDP communication of one training step: units (what is flattened and sharded together),
// per-rank element counts after padding, and the collectives each unit issues per step.
//   FSDP1: a unit's flat parameter is padded to a multiple of the shard group size S;
//          per-rank count = ceil(numel / S).
//   FSDP2: every parameter is sharded on dim 0, padded to a multiple of S;
//          per-rank count = Σ ceil(dim0 / S) · (numel / dim0).
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/coll_op.hpp"
#include "common/dtype.hpp"
#include "common/model_config.hpp"
#include "common/param_layout.hpp"

namespace opbench {

enum class WrapPolicy { layer, submodule, model };
WrapPolicy parse_wrap_policy(const std::string& text);

struct FsdpUnit {
  std::string name;            // "decoder_layer", "moe_layer.attention", "root", ...
  std::int64_t instances = 1;  // identical units in the model (e.g. 80 decoder layers)
  bool is_root = false;        // the root unit stays gathered between forward and backward
  std::vector<ParamTensor> params;
  std::int64_t numel() const { return total_numel(params); }
};

std::vector<FsdpUnit> fsdp_units(const ModelConfig& model, WrapPolicy wrap);

std::int64_t fsdp1_per_rank_count(const FsdpUnit& unit, std::int64_t shard_size);
std::int64_t fsdp2_per_rank_count(const FsdpUnit& unit, std::int64_t shard_size);

struct FsdpConfig {
  std::int64_t world_size = 8;
  int version = 2;                    // 1 or 2
  DType param_dtype = DType::bf16;    // all-gather dtype
  DType reduce_dtype = DType::fp32;   // reduce-scatter (and HSDP all-reduce) dtype
  std::int64_t shard_group_size = 0;  // HSDP: shard within groups of this size; 0: the world
  bool reshard_after_forward = true;
  WrapPolicy wrap = WrapPolicy::layer;

  std::int64_t shard_size() const { return shard_group_size > 0 ? shard_group_size : world_size; }
  std::int64_t replicas() const { return world_size / shard_size(); }
};

// One collective a unit issues per step.
struct PlanEntry {
  std::string unit;
  std::int64_t instances = 1;
  std::int64_t params = 0;  // per instance
  CollOp op = CollOp::all_gather;
  std::string phase;  // "forward", "backward"
  DType dtype = DType::bf16;
  std::int64_t per_rank_count = 0;  // elements each rank contributes (the shard)
  std::int64_t group_size = 1;      // ranks in the collective
  std::int64_t calls_per_step = 0;

  std::int64_t shard_bytes() const {
    return per_rank_count * static_cast<std::int64_t>(dtype_size(dtype));
  }
  // nccl-tests' size: the whole gathered / scattered buffer (world x shard), or the shard itself
  // for an all-reduce. nccl-tests' all_gather_perf and reduce_scatter_perf take this.
  std::int64_t buffer_bytes() const {
    return op == CollOp::all_reduce ? shard_bytes() : shard_bytes() * group_size;
  }
  // The exact counts of the call, not rounded as nccl-tests rounds a size.
  CollCounts counts() const;
};

// Throws bad_input for a world size below 1, a shard group that does not divide it, or a version
// other than 1 or 2.
void validate(const FsdpConfig& config);
std::vector<PlanEntry> fsdp_plan(const std::vector<FsdpUnit>& units, const FsdpConfig& config);

// The nccl-tests command that measures a plan entry with the right size semantics.
std::string nccl_tests_command(const PlanEntry& entry, RedOp reduce_op);

}  // namespace opbench
