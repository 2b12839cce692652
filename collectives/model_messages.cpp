#include "collectives/model_messages.hpp"

#include <fmt/format.h>

namespace opbench {

std::vector<ModelMessage> model_messages(const ModelConfig& m, const ModelParallel& p) {
  const std::int64_t seq = p.seqlen > 0 ? p.seqlen : m.seqlen;
  const std::int64_t tokens = p.micro_batch * seq;
  const auto ts = static_cast<std::int64_t>(dtype_size(p.dtype));
  const auto activation = static_cast<std::uint64_t>(tokens * m.hidden_size * ts);
  const std::int64_t layers = m.num_hidden_layers;
  std::vector<ModelMessage> out;
  if (p.tp > 1) {
    // Megatron: one all-reduce after attention and one after the MLP, forward and backward.
    out.push_back({fmt::format("tp all_reduce of mbs*seq*hidden ({}x{}x{})", p.micro_batch, seq,
                               m.hidden_size),
                   CollOp::all_reduce, activation, static_cast<int>(p.tp), 4 * layers});
    // With sequence parallelism each all-reduce becomes an all-gather plus a reduce-scatter of
    // the same full activation (nccl-tests size = the gathered buffer).
    out.push_back({"sp all_gather of mbs*seq*hidden", CollOp::all_gather, activation,
                   static_cast<int>(p.tp), 4 * layers});
    out.push_back({"sp reduce_scatter of mbs*seq*hidden", CollOp::reduce_scatter, activation,
                   static_cast<int>(p.tp), 4 * layers});
  }
  if (m.moe && p.ep > 1) {
    // Dispatch and combine, forward and backward: each rank sends its tokens' top-k copies.
    const auto routed =
        static_cast<std::uint64_t>(tokens * m.moe->num_experts_per_tok * m.hidden_size * ts);
    out.push_back({fmt::format("ep all_to_all of tokens*top_k*hidden ({}x{}x{})", tokens,
                               m.moe->num_experts_per_tok, m.hidden_size),
                   CollOp::all_to_all, routed, static_cast<int>(p.ep), 4 * m.moe_layers()});
  }
  if (p.pp > 1)
    out.push_back({"pp send_recv of mbs*seq*hidden activations", CollOp::send_recv, activation,
                   static_cast<int>(p.pp), 2});
  return out;
}

}  // namespace opbench
