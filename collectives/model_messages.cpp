#include "collectives/model_messages.hpp"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <tuple>

#include "collectives/parallel_messages.hpp"

namespace opbench {

namespace {

// Calls in a whole step of one micro-batch: every layer (or MoE layer) of the model, and the
// first and last stage once each.
std::int64_t calls_per_step(const ParallelMessage& x, const ModelConfig& m) {
  switch (x.scope) {
    case MessageScope::per_layer:
      return x.count * m.num_hidden_layers;
    case MessageScope::per_tp_mlp_layer:
      return x.count * m.tp_mlp_layers();
    case MessageScope::per_moe_layer:
      return x.count * m.moe_layers();
    case MessageScope::first_stage:
    case MessageScope::last_stage:
      return x.count;
  }
  return 0;
}

// The messages of one pattern summed by what a benchmark case is (op, size, dtype), in the
// order they first come; `label` names each from its op.
void add_summed(const std::vector<ParallelMessage>& messages, const ModelConfig& m, int group,
                ParallelAxis axis, const std::function<std::string(const ParallelMessage&)>& label,
                std::vector<ModelMessage>& out) {
  std::map<std::tuple<CollOp, std::int64_t, DType>, std::size_t> index;
  for (const ParallelMessage& x : messages) {
    const auto key = std::tuple{x.op, x.bytes, x.dtype};
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      out.push_back({label(x), x.op, static_cast<std::uint64_t>(x.bytes), x.dtype, group, 0, axis});
    }
    out[it->second].calls_per_step += calls_per_step(x, m);
  }
}

}  // namespace

std::vector<ModelMessage> model_messages(const ModelConfig& m, const ModelParallel& p) {
  // a rank's share of each sequence: all of it, or 1/cp with context parallelism
  const std::int64_t seq = (p.seqlen > 0 ? p.seqlen : m.seqlen) / p.cp;
  const std::string seq_term = p.cp > 1 ? "(seq/cp)" : "seq";
  ParallelShape shape;
  shape.tokens = p.micro_batch * seq;
  shape.cp = p.cp;
  shape.kv_width = p.cp > 1 ? kv_elements_per_token(m, p.tp) : 0;
  shape.hidden = m.hidden_size;
  shape.tp = p.tp;
  shape.ep = p.ep;
  shape.etp = p.expert_tp();
  shape.top_k = m.moe ? m.moe->num_experts_per_tok : 0;
  shape.dispatcher = p.dispatcher;
  shape.dtype = p.dtype;
  const std::string dims = fmt::format("({}x{}x{})", p.micro_batch, seq, m.hidden_size);
  const int tp = static_cast<int>(p.tp);
  // Megatron-Core's MoE layers refuse tp > 1 without sequence parallelism: such a model's messages
  // are listed with it only
  const bool sp_only = tp > 1 && m.moe_layers() > 0;
  // Sequence parallelism splits each sequence over tp: where tp does not divide it, a dense
  // model's messages are listed without it (an MoE model's cannot be, and are refused)
  const bool sp_splits = tp > 1 && seq % tp == 0;
  if (sp_only) require_sequence_split(seq, tp, p.cp);
  std::vector<ModelMessage> out;
  // Tensor parallelism without sequence parallelism, then with it (the same step's alternative:
  // its all-gathers and reduce-scatters); the cross-entropy all-reduce is in both, listed once.
  // (the vocabulary-parallel cross-entropy's statistics: one fp32 a token, on the last stage)
  auto loss_stats = [&](const ParallelMessage& x) {
    return x.scope == MessageScope::last_stage && x.dtype == DType::fp32 &&
           x.bytes == shape.tokens * 4;
  };
  std::vector<ParallelMessage> without_sp = tensor_parallel_messages(shape);
  if (sp_only) std::erase_if(without_sp, [&](const ParallelMessage& x) { return !loss_stats(x); });
  add_summed(
      without_sp, m, tp, ParallelAxis::tp,
      [&](const ParallelMessage& x) {
        return loss_stats(x) ? fmt::format("tp all_reduce of cross-entropy stats ({}x{} fp32)",
                                           p.micro_batch, seq)
                             : fmt::format("tp all_reduce of mbs*{}*hidden {}", seq_term, dims);
      },
      out);
  shape.sp = true;
  std::vector<ParallelMessage> with_sp =
      sp_splits ? tensor_parallel_messages(shape) : std::vector<ParallelMessage>{};
  std::erase_if(with_sp, [](const ParallelMessage& x) { return x.op == CollOp::all_reduce; });
  add_summed(
      with_sp, m, tp, ParallelAxis::tp,
      [&](const ParallelMessage& x) {
        return fmt::format("sp {} of mbs*{}*hidden {}", coll_op_name(x.op), seq_term, dims);
      },
      out);
  // Context parallelism's ring of K and V (attention holds every token of the rank's share
  // whatever sp: its heads are what tp splits).
  const std::int64_t kv_bytes =
      shape.tokens * shape.kv_width * static_cast<std::int64_t>(dtype_size(p.dtype));
  add_summed(
      context_parallel_messages(shape), m, static_cast<int>(p.cp), ParallelAxis::cp,
      [&](const ParallelMessage& x) {
        return fmt::format("cp send_recv of {}mbs*(seq/cp)*kv ({}x{}x{})",
                           x.bytes == kv_bytes ? "" : "2*", p.micro_batch, seq, shape.kv_width);
      },
      out);
  // Expert and pipeline messages, without sequence parallelism and (tp > 1) with it, where each
  // rank holds tokens / tp of the sequence: the sizes bench_step looks for either way.
  const std::vector<bool> sps = tp == 1 || !sp_splits ? std::vector<bool>{false}
                                : sp_only             ? std::vector<bool>{true}
                                                      : std::vector<bool>{false, true};
  for (bool sp : sps) {
    shape.sp = sp;
    const std::string prefix = sp ? "sp " : "";
    const std::int64_t tokens = shape.tokens / (sp ? p.tp : 1);
    // the ep group's, the etp group's, the tp_ep group's
    std::vector<ParallelMessage> experts, expert_tp, gathered;
    for (ParallelMessage& x : expert_parallel_messages(shape))
      (x.group == MessageGroup::etp     ? expert_tp
       : x.group == MessageGroup::tp_ep ? gathered
                                        : experts)
          .push_back(std::move(x));
    add_summed(
        experts, m, static_cast<int>(p.ep), ParallelAxis::ep,
        [&](const ParallelMessage&) {
          return fmt::format("{}ep all_to_all of tokens*top_k*hidden ({}x{}x{})", prefix, tokens,
                             shape.top_k, m.hidden_size);
        },
        out);
    add_summed(
        expert_tp, m, static_cast<int>(shape.etp), ParallelAxis::etp,
        [&](const ParallelMessage& x) {
          return fmt::format("{}etp {} of etp*tokens*top_k*hidden ({}x{}x{}x{})", prefix,
                             coll_op_name(x.op), shape.etp, tokens, shape.top_k, m.hidden_size);
        },
        out);
    add_summed(
        gathered, m, static_cast<int>(shape.etp * shape.ep), ParallelAxis::tp_ep,
        [&](const ParallelMessage& x) {
          return fmt::format("{}etp*ep {} of etp*ep*tokens*hidden ({}x{}x{}x{})", prefix,
                             coll_op_name(x.op), shape.etp, shape.ep, tokens, m.hidden_size);
        },
        out);
    // 1F1B pairs each stage's send with the next one's receive: a send_recv of 2 ranks.
    if (p.pp > 1)
      out.push_back({fmt::format("{}pp send_recv of mbs*{}*hidden activations", prefix, seq_term),
                     CollOp::send_recv,
                     static_cast<std::uint64_t>(tokens * m.hidden_size *
                                                static_cast<std::int64_t>(dtype_size(p.dtype))),
                     p.dtype, 2, 2, ParallelAxis::pp});
  }
  return out;
}

}  // namespace opbench
