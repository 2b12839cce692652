#include "step/step_config.hpp"

#include <fmt/format.h>

#include "common/enum_names.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {

constexpr EnumNames<Recompute, 3> kRecomputeNames{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};
constexpr EnumNames<Sharding, 4> kShardingNames{{{Sharding::ddp, "ddp"},
                                                 {Sharding::zero1, "zero1"},
                                                 {Sharding::fsdp, "fsdp"},
                                                 {Sharding::hsdp, "hsdp"}}};
constexpr EnumNames<Kernels, 2> kKernelsNames{
    {{Kernels::fused, "fused"}, {Kernels::eager, "eager"}}};
constexpr EnumNames<OptimizerImpl, 3> kOptimizerImplNames{{{OptimizerImpl::fused, "fused"},
                                                           {OptimizerImpl::foreach, "foreach"},
                                                           {OptimizerImpl::single, "single"}}};

std::string recompute_name(Recompute r) {
  return std::string(enum_name(kRecomputeNames, r));
}

Recompute parse_recompute(const std::string& text) {
  return enum_from_flag(kRecomputeNames, "--recompute", text);
}

std::string sharding_name(Sharding s) {
  return std::string(enum_name(kShardingNames, s));
}

Sharding parse_sharding(const std::string& text) {
  return enum_from_flag(kShardingNames, "--sharding", text);
}

std::string kernels_name(Kernels k) {
  return std::string(enum_name(kKernelsNames, k));
}

Kernels parse_kernels(const std::string& text) {
  return enum_from_flag(kKernelsNames, "--kernels", text);
}

Kernels parse_attention_kernels(const std::string& text) {
  return enum_from_flag(kKernelsNames, "--attention-kernels", text);
}

std::string optimizer_impl_name(OptimizerImpl o) {
  return std::string(enum_name(kOptimizerImplNames, o));
}

OptimizerImpl parse_optimizer_impl(const std::string& text) {
  return enum_from_flag(kOptimizerImplNames, "--optimizer-impl", text);
}

std::int64_t StepConfig::micro_batches() const {
  if (grad_accum > 0) return grad_accum;
  if (global_batch > 0) return global_batch / (micro_batch * dp);
  return 1;
}

// Layers spread as evenly as they go, the earlier stages taking one more when pp does not divide
// them (the first stage also holds the embedding, the last the LM head and loss).
std::int64_t StepConfig::stage_layers(std::int64_t stage) const {
  const std::int64_t L = model.num_hidden_layers;
  return L / pp + (stage < L % pp ? 1 : 0);
}

std::int64_t StepConfig::stage_first_layer(std::int64_t stage) const {
  std::int64_t first = 0;
  for (std::int64_t s = 0; s < stage; ++s)
    first += stage_layers(s);
  return first;
}

namespace {

void require_positive(std::int64_t v, const char* flag) {
  if (v < 1) throw bad_input(fmt::format("{}: must be at least 1, got {}", flag, v));
}

}  // namespace

void validate(const StepConfig& c) {
  require_positive(c.micro_batch, "--micro-batch");
  require_positive(c.seq(), "--seq-len");
  require_positive(c.tp, "--tp");
  require_positive(c.pp, "--pp");
  require_positive(c.vpp, "--vpp");
  require_positive(c.dp, "--dp");
  require_positive(c.ep, "--ep");
  require_positive(c.cp, "--cp");
  if (c.cp > 1) {
    context_parallel_seqlens(c.model, {c.seq()}, c.cp);  // refuses a sequence it cannot cut
    if (c.kernels == Kernels::eager || c.attention() == Kernels::eager)
      throw bad_input(fmt::format(
          "--cp {}: context parallelism is modelled with fused kernels only (Megatron-Core with "
          "Transformer Engine's ring attention); give --kernels fused",
          c.cp));
    if (c.sharding == Sharding::fsdp || c.sharding == Sharding::hsdp)
      throw bad_input(fmt::format(
          "--cp {}: --sharding {} is modelled without context parallelism (give --cp 1, or "
          "--sharding ddp or zero1)",
          c.cp, sharding_name(c.sharding)));
  }
  const std::string& name = c.model.name;
  if (c.pp * c.vpp > c.model.num_hidden_layers)
    throw bad_input(
        fmt::format("--pp {} x --vpp {}: more pipeline chunks than the {} layers of "
                    "model '{}'",
                    c.pp, c.vpp, c.model.num_hidden_layers, name));
  if (c.vpp > 1 && c.pp == 1)
    throw bad_input("--vpp: virtual pipeline stages need --pp of 2 or more");
  if (c.global_batch < 0 || c.grad_accum < 0)
    throw bad_input("--global-batch / --grad-accum: must not be negative");
  if (c.global_batch > 0 && c.grad_accum > 0)
    throw bad_input("--global-batch and --grad-accum: give one of them, not both");
  if (c.global_batch > 0 && c.global_batch % (c.micro_batch * c.dp) != 0)
    throw bad_input(fmt::format(
        "--global-batch {}: not a multiple of --micro-batch {} x --dp {} (= {} sequences per "
        "micro-batch over the replicas)",
        c.global_batch, c.micro_batch, c.dp, c.micro_batch * c.dp));
  if (c.vpp > 1 && c.micro_batches() % c.pp != 0)
    throw bad_input(
        fmt::format("--vpp {}: the interleaved schedule needs the {} micro-batches "
                    "to be a multiple of --pp {}",
                    c.vpp, c.micro_batches(), c.pp));
  if (c.sp()) require_sequence_split(c.cp_seq(), c.tp, c.cp);
  if (c.etp < 0) throw bad_input(fmt::format("--etp: must be at least 1, got {}", c.etp));
  if (c.model.moe && c.model.moe_layers() > 0 && c.tp > 1 && !c.sequence_parallel)
    throw bad_input(fmt::format(
        "--no-sequence-parallel: model '{}' has MoE layers, which Megatron-Core trains with "
        "--tp above 1 only under sequence parallelism (MoELayer refuses otherwise); leave the "
        "flag out or give --tp 1",
        name));
  if (c.ep > 1 || c.etp > 0) {
    if (!c.model.moe)
      throw bad_input(fmt::format(
          "{}: model '{}' has no routed experts",
          c.ep > 1 ? fmt::format("--ep {}", c.ep) : fmt::format("--etp {}", c.etp), name));
    // Megatron-Core lays a stage's tp · dp ranks out again for the experts, as etp · ep · the
    // experts' data parallelism; with etp = tp the expert-parallel group is made of
    // data-parallel ranks
    if ((c.tp * c.dp_cp()) % (c.expert_tp() * c.ep) != 0)
      throw bad_input(
          c.etp > 0 || c.cp > 1
              ? fmt::format("--etp {} x --ep {}: does not divide --tp {}{} x --dp {} (the "
                            "experts' ranks are a stage's ranks laid out again)",
                            c.expert_tp(), c.ep, c.tp,
                            c.cp > 1 ? fmt::format(" x --cp {}", c.cp) : "", c.dp)
              : fmt::format("--ep {}: does not divide --dp {} (the expert-parallel group "
                            "is made of data-parallel ranks)",
                            c.ep, c.dp));
  }
  // (the memory and memop paths divide the experts' width by etp as the GEMMs do)
  if (c.etp > 0 && c.model.moe && c.model.moe->moe_intermediate_size % c.etp != 0)
    throw bad_input(
        fmt::format("--etp {}: does not divide moe_intermediate_size ({}) of model '{}'", c.etp,
                    c.model.moe->moe_intermediate_size, name));
  if ((c.sharding == Sharding::fsdp || c.sharding == Sharding::hsdp) && (c.tp > 1 || c.pp > 1))
    throw bad_input(
        fmt::format("--sharding {}: modelled without tensor or pipeline "
                    "parallelism only (give --tp 1 --pp 1)",
                    sharding_name(c.sharding)));
  if (c.sharding == Sharding::hsdp &&
      (c.shard_group < 1 || c.dp % c.shard_group != 0 || c.shard_group == c.dp))
    throw bad_input(
        fmt::format("--shard-group {}: HSDP needs a shard group that divides --dp {} "
                    "and is smaller than it",
                    c.shard_group, c.dp));
  if (c.fsdp_version != 1 && c.fsdp_version != 2)
    throw bad_input(fmt::format("--fsdp-version {}: must be 1 or 2", c.fsdp_version));
  if (!(c.overlap >= 0 && c.overlap <= 1))
    throw bad_input(
        fmt::format("--overlap {}: must be none, full or a fraction in [0, 1]", c.overlap));
  require_positive(c.bucket_bytes, "--bucket-mb");
  if (c.kernels == Kernels::fused && c.attention() == Kernels::eager)
    throw bad_input(
        "--attention-kernels eager: only with --kernels eager (the fused plan's attention is "
        "one fused kernel)");
  if (c.optimizer_dtype != DType::fp32 && c.optimizer_dtype != c.dtype)
    throw bad_input(
        fmt::format("--optimizer-dtype {}: AdamW's moments are fp32 or the model's own dtype ({})",
                    dtype_name(c.optimizer_dtype), dtype_name(c.dtype)));
}

}  // namespace opbench
