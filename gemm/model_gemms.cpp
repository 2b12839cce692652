#include "gemm/model_gemms.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/int_math.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// Splits `total` across tp ranks, which must divide it exactly.
std::int64_t split_tp(const ModelConfig& m, std::int64_t total, std::int64_t tp, const char* what,
                      const char* flag = "--tp") {
  if (total % tp != 0)
    throw bad_input(
        fmt::format("{} {}: does not divide {} ({}) of model '{}'", flag, tp, what, total, m.name));
  return total / tp;
}

void add_attention(const ModelConfig& m, std::int64_t tokens, std::int64_t tp, bool separate,
                   std::vector<LinearLayer>& out) {
  const std::int64_t L = m.num_hidden_layers, H = m.hidden_size;
  const std::int64_t heads = split_tp(m, m.num_attention_heads, tp, "num_attention_heads");
  if (m.mla) {
    const auto& a = *m.mla;
    const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    // The down projections are small and replicated on every tensor-parallel rank.
    if (a.q_lora_rank) {
      out.push_back({"attn_q_down", tokens, *a.q_lora_rank, H, L, "replicated across tp", false,
                     *a.q_lora_rank, tp});
      out.push_back({"attn_q_up", tokens, heads * qk_head, *a.q_lora_rank, L, ""});
    } else {
      out.push_back({"attn_q", tokens, heads * qk_head, H, L, ""});
    }
    out.push_back({"attn_kv_down", tokens, a.kv_lora_rank + a.qk_rope_head_dim, H, L,
                   "replicated across tp", false, a.kv_lora_rank + a.qk_rope_head_dim, tp});
    out.push_back(
        {"attn_kv_up", tokens, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, L, ""});
    out.push_back({"attn_out", tokens, H, heads * a.v_head_dim, L, ""});
    return;
  }
  // GQA with fewer KV heads than tp ranks replicates each KV head (as vLLM and TensorRT-LLM
  // shard it; Megatron-core requires tp to divide them): model FLOPs count that work once.
  const TpHeads split = heads_per_tp_rank(m, tp);
  const bool replicated = split.kv_replicas > 1;
  if (separate) {
    out.push_back({"attn_q", tokens, heads * m.head_dim, H, L, ""});
    for (const char* name : {"attn_k", "attn_v"})
      out.push_back({name, tokens, split.kv * m.head_dim, H, L, split.note, false,
                     replicated ? split.kv * m.head_dim : 0, split.kv_replicas});
  } else {
    out.push_back({"attn_qkv", tokens, (heads + 2 * split.kv) * m.head_dim, H, L, split.note, false,
                   replicated ? 2 * split.kv * m.head_dim : 0, split.kv_replicas});
  }
  out.push_back({"attn_out", tokens, H, heads * m.head_dim, L, ""});
}

// An MLP's projections named `prefix`_…, `rows` tokens of the hidden through `width`: gate and up
// fused when gated (SwiGLU), or separate as Hugging Face writes them with `separate`; up alone
// when not gated; then down. The dense MLP, the routed experts and the shared experts alike.
void add_mlp_projections(const ModelConfig& m, const std::string& prefix, std::int64_t rows,
                         std::int64_t width, std::int64_t calls, const std::string& note,
                         bool routed_expert, bool separate, std::vector<LinearLayer>& out) {
  const std::int64_t H = m.hidden_size;
  if (m.gated_mlp && separate) {
    out.push_back({prefix + "_gate", rows, width, H, calls, note, routed_expert});
    out.push_back({prefix + "_up", rows, width, H, calls, note, routed_expert});
  } else if (m.gated_mlp) {
    out.push_back({prefix + "_gate_up", rows, 2 * width, H, calls, note, routed_expert});
  } else {
    out.push_back({prefix + "_up", rows, width, H, calls, note, routed_expert});
  }
  out.push_back({prefix + "_down", rows, H, width, calls, note, routed_expert});
}

void add_dense_mlp(const ModelConfig& m, std::int64_t tokens, std::int64_t tp, std::int64_t layers,
                   bool separate, std::vector<LinearLayer>& out) {
  const std::int64_t I = split_tp(m, m.intermediate_size, tp, "intermediate_size");
  add_mlp_projections(m, "mlp", tokens, I, layers, "", false, separate, out);
}

void add_moe(const ModelConfig& m, std::int64_t tokens, const ParallelConfig& p,
             std::vector<LinearLayer>& out) {
  const auto& e = *m.moe;
  const std::int64_t tp = p.tp, etp = p.expert_tp();
  const bool separate = p.separate_projections;
  const std::int64_t layers = m.moe_layers(), H = m.hidden_size;
  const std::int64_t I = split_tp(m, e.moe_intermediate_size, etp, "moe_intermediate_size",
                                  p.etp > 0 ? "--etp" : "--tp");
  // Balanced routing: every expert gets tokens·top_k / n_experts rows (rounded up), of the tokens
  // the rank routes.
  const std::int64_t routed = expert_routed_tokens(tokens, tp, etp);
  const std::int64_t expert_tokens = ceil_div(routed * e.num_experts_per_tok, e.n_routed_experts);
  const std::string balance = fmt::format("balanced routing: {} tokens x top-{} / {} experts",
                                          routed, e.num_experts_per_tok, e.n_routed_experts);
  const std::int64_t expert_calls = layers * e.n_routed_experts;
  // The router runs on the rank's own tokens: tokens / tp, the sequence-parallel input that
  // Megatron-Core's MoE layers require at tp > 1 (its weights replicated)
  out.push_back({"moe_router", ceil_div(tokens, tp), e.n_routed_experts, H, layers,
                 tp > 1 ? "the rank's tokens / tp (sequence parallel), weights replicated" : ""});
  add_mlp_projections(m, "moe_expert", expert_tokens, I, expert_calls, balance, true, separate,
                      out);
  if (e.n_shared_experts > 0) {
    const std::int64_t shared = split_tp(m, e.n_shared_experts * e.moe_intermediate_size, tp,
                                         "n_shared_experts x moe_intermediate_size");
    add_mlp_projections(m, "moe_shared", tokens, shared, layers, "", false, separate, out);
  }
}

}  // namespace

std::string pass_name(GemmPass p) {
  switch (p) {
    case GemmPass::fprop:
      return "fprop";
    case GemmPass::dgrad:
      return "dgrad";
    case GemmPass::wgrad:
      return "wgrad";
  }
  return "";
}

std::vector<GemmPass> parse_passes(const std::string& text) {
  std::vector<GemmPass> out;
  for (const auto& item : split(text, ',')) {
    auto p = to_lower(item);
    if (p == "fprop" || p == "fwd")
      push_once(out, GemmPass::fprop, "--pass", item);
    else if (p == "dgrad")
      push_once(out, GemmPass::dgrad, "--pass", item);
    else if (p == "wgrad")
      push_once(out, GemmPass::wgrad, "--pass", item);
    else
      throw bad_input(
          fmt::format("--pass: unknown pass '{}' (accepted: fprop, dgrad, wgrad)", item));
  }
  if (out.empty()) throw bad_input("--pass: empty list");
  return out;
}

std::int64_t expert_routed_tokens(std::int64_t tokens, std::int64_t tp, std::int64_t etp) {
  if ((tokens * etp) % tp != 0)
    throw bad_input(fmt::format(
        "--etp {} at --tp {}: a micro-batch's {} tokens x {} / {} is not a whole number of tokens "
        "for an expert-parallel rank to route; give an --etp that --tp divides, or a sequence "
        "length that --tp divides",
        etp, tp, tokens, etp, tp));
  return tokens * etp / tp;
}

std::vector<LinearLayer> model_linear_layers(const ModelConfig& m, const ParallelConfig& p) {
  if (p.tp < 1) throw bad_input(fmt::format("--tp: must be at least 1, got {}", p.tp));
  const std::int64_t seqlen = p.seqlen > 0 ? p.seqlen : m.seqlen;
  const std::int64_t tokens = p.micro_batch * seqlen;
  std::vector<LinearLayer> out;
  add_attention(m, tokens, p.tp, p.separate_projections, out);
  if (m.dense_mlp_layers() > 0)
    add_dense_mlp(m, tokens, p.tp, m.dense_mlp_layers(), p.separate_projections, out);
  if (m.moe) add_moe(m, tokens, p, out);
  // The LM head's vocabulary is padded up to a multiple of tp (Megatron pads to 128 x tp).
  std::int64_t vocab = ceil_div(m.vocab_size, p.tp);
  out.push_back({"lm_head", tokens, vocab, m.hidden_size, 1,
                 m.vocab_size % p.tp
                     ? fmt::format("vocab {} padded to {}", m.vocab_size, vocab * p.tp)
                     : ""});
  return out;
}

GemmProblem pass_problem(const LinearLayer& l, GemmPass pass, DType dtype) {
  GemmProblem g;
  g.dtype = dtype;
  g.out_dtype = gemm_output_dtype(dtype);
  switch (pass) {
    case GemmPass::fprop:
      g.m = l.M, g.n = l.N, g.k = l.K, g.transa = false, g.transb = true;
      break;
    case GemmPass::dgrad:
      g.m = l.M, g.n = l.K, g.k = l.N, g.transa = false, g.transb = false;
      break;
    case GemmPass::wgrad:
      g.m = l.N, g.n = l.K, g.k = l.M, g.transa = true, g.transb = false;
      break;
  }
  return g;
}

}  // namespace opbench
