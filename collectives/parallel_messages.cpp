#include "collectives/parallel_messages.hpp"

#include "common/enum_names.hpp"

namespace opbench {

namespace {

constexpr EnumNames<MoeDispatcher, 2> kDispatcherNames{
    {{MoeDispatcher::alltoall, "alltoall"}, {MoeDispatcher::allgather, "allgather"}}};

// The all-gather dispatcher: each rank gathers the tp_ep group's tokens, `bytes` of its own.
std::vector<ParallelMessage> allgather_dispatcher_messages(const ParallelShape& s,
                                                           std::int64_t bytes) {
  const std::int64_t group = s.etp * s.ep;
  if (group <= 1) return {};  // Megatron-Core then neither gathers nor scatters
  const std::int64_t gathered = group * bytes;
  const auto F = MessagePass::forward, B = MessagePass::backward;
  const auto AG = CollOp::all_gather, RS = CollOp::reduce_scatter;
  const auto moe = MessageScope::per_moe_layer;
  const auto g = MessageGroup::tp_ep;
  return {{AG, F, moe, 1, gathered, s.dtype, "tokens of every rank holding experts", g},
          {RS, F, moe, 1, gathered, s.dtype, "expert outputs", g},
          {AG, B, moe, 1, gathered, s.dtype, "expert output gradients", g},
          {RS, B, moe, 1, gathered, s.dtype, "tokens' gradients", g}};
}

}  // namespace

std::string moe_dispatcher_name(MoeDispatcher d) {
  return std::string(enum_name(kDispatcherNames, d));
}

MoeDispatcher parse_moe_dispatcher(const std::string& text) {
  return enum_from_flag(kDispatcherNames, "--moe-dispatcher", text);
}

std::vector<ParallelMessage> tensor_parallel_messages(const ParallelShape& s) {
  if (s.tp <= 1) return {};
  const std::int64_t act = s.tokens * s.hidden * static_cast<std::int64_t>(dtype_size(s.dtype));
  const auto AG = CollOp::all_gather, RS = CollOp::reduce_scatter, AR = CollOp::all_reduce;
  const auto F = MessagePass::forward, B = MessagePass::backward;
  const auto layer = MessageScope::per_layer, mlp = MessageScope::per_tp_mlp_layer,
             first = MessageScope::first_stage, last = MessageScope::last_stage;
  std::vector<ParallelMessage> out;
  if (s.sp) {
    out = {{AG, F, layer, 1, act, s.dtype, "input of the QKV projection"},
           {AG, F, mlp, 1, act, s.dtype, "input of the MLP"},
           {RS, F, layer, 1, act, s.dtype, "output of attention"},
           {RS, F, mlp, 1, act, s.dtype, "output of the MLP"},
           {AG, B, layer, 2, act, s.dtype, "attention: input again for wgrad, output gradient"},
           {AG, B, mlp, 2, act, s.dtype, "MLP: input again for wgrad, output gradient"},
           {RS, B, layer, 1, act, s.dtype, "input gradient of the QKV projection"},
           {RS, B, mlp, 1, act, s.dtype, "input gradient of the MLP"},
           {RS, F, first, 1, act, s.dtype, "embedding output"},
           {AG, B, first, 1, act, s.dtype, "embedding output gradient"},
           {AG, F, last, 1, act, s.dtype, "LM head input"},
           {RS, B, last, 1, act, s.dtype, "LM head input gradient"}};
  } else {
    out = {{AR, F, layer, 1, act, s.dtype, "output of attention"},
           {AR, F, mlp, 1, act, s.dtype, "output of the MLP"},
           {AR, B, layer, 1, act, s.dtype, "input gradient of the QKV projection"},
           {AR, B, mlp, 1, act, s.dtype, "input gradient of the MLP"},
           {AR, F, first, 1, act, s.dtype, "embedding output"},
           {AR, B, last, 1, act, s.dtype, "LM head input gradient"}};
  }
  out.push_back({AR, F, last, 3, s.tokens * 4, DType::fp32, "cross-entropy max, target, sum"});
  return out;
}

std::vector<ParallelMessage> context_parallel_messages(const ParallelShape& s) {
  if (s.cp <= 1) return {};
  const std::int64_t kv = s.tokens * s.kv_width * static_cast<std::int64_t>(dtype_size(s.dtype));
  const auto F = MessagePass::forward, B = MessagePass::backward;
  const auto layer = MessageScope::per_layer;
  const auto g = MessageGroup::cp;
  std::vector<ParallelMessage> out{
      {CollOp::send_recv, F, layer, s.cp - 1, kv, s.dtype, "K and V around the ring", g},
      {CollOp::send_recv, B, layer, 2, kv, s.dtype,
       "K and V around the ring again, the last block's gradients", g}};
  if (s.cp > 2)
    out.push_back({CollOp::send_recv, B, layer, s.cp - 2, 2 * kv, s.dtype,
                   "K and V with the gradients of the block before", g});
  return out;
}

std::vector<ParallelMessage> expert_parallel_messages(const ParallelShape& s) {
  if (s.top_k <= 0) return {};
  const std::int64_t tokens = s.tokens / (s.sp ? s.tp : 1);
  const std::int64_t token_bytes = s.hidden * static_cast<std::int64_t>(dtype_size(s.dtype));
  if (s.dispatcher == MoeDispatcher::allgather)
    return allgather_dispatcher_messages(s, tokens * token_bytes);
  const std::int64_t bytes = tokens * s.top_k * token_bytes;
  const auto F = MessagePass::forward, B = MessagePass::backward;
  const auto moe = MessageScope::per_moe_layer;
  std::vector<ParallelMessage> out;
  if (s.ep > 1)
    out = {
        {CollOp::all_to_all, F, moe, 2, bytes, s.dtype, "dispatch and combine", MessageGroup::ep},
        {CollOp::all_to_all, B, moe, 2, bytes, s.dtype, "dispatch and combine gradients",
         MessageGroup::ep}};
  if (s.etp > 1) {
    // the buffer gathered (scattered): the etp ranks' received tokens together
    const std::int64_t gathered = s.etp * bytes;
    out.push_back(
        {CollOp::all_gather, F, moe, 1, gathered, s.dtype, "dispatched tokens", MessageGroup::etp});
    out.push_back({CollOp::reduce_scatter, F, moe, 1, gathered, s.dtype, "expert outputs",
                   MessageGroup::etp});
    out.push_back({CollOp::all_gather, B, moe, 1, gathered, s.dtype, "expert output gradients",
                   MessageGroup::etp});
    out.push_back({CollOp::reduce_scatter, B, moe, 1, gathered, s.dtype,
                   "dispatched tokens' gradients", MessageGroup::etp});
  }
  return out;
}

}  // namespace opbench
