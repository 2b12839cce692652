#include "step/eager_plan.hpp"

#include <fmt/format.h>

#include "common/rotation.hpp"

#include "memops/memop_cases.hpp"
#include "step/step_operators.hpp"

namespace opbench {
namespace {

// The stage's kernels as they are listed: each call site's phase, a name, and what it is timed as.
class EagerKernels {
 public:
  EagerKernels(const StageView& v, std::vector<StepOperator>& out) : v_(v), out_(out) {}

  // The kernels after this are outside the decoder layers (embedding, final norm, loss): no
  // activation checkpointing recomputes them.
  void leave_layers() { in_layers_ = false; }

  // A reduction (mean, sum over tokens or heads), or a kernel on a few thousand elements, that
  // reads and writes `elements` elements in all: bench_memops has no reduction of that kind, so
  // it is timed as a copy that moves the same bytes, elements / 2 of them.
  void bytes(StepPhase phase, const std::string& name, std::int64_t elements, std::int64_t calls,
             bool attention_core = false) {
    StepOperator op = make_op(StepFamily::memop, phase, name + " (eager)", calls * v_.m,
                              fmt::format("timed as a copy of the same bytes ({} elements read "
                                          "and written)",
                                          elements));
    op.memop = memop_case(v_.c, MemOp::copy, MemPass::fwd, 1, ceil_div(elements, 2));
    push(op, attention_core);
  }

  // One of bench_memops's eager kernels (mul, scale, sqrt, silu, fill and the in-place ones)
  // over `elements` elements.
  void kernel(StepPhase phase, const std::string& name, MemOp kind, MemPass pass,
              std::int64_t elements, std::int64_t calls, bool attention_core = false) {
    StepOperator op = make_op(StepFamily::memop, phase, name + " (eager)", calls * v_.m, "");
    op.memop = memop_case(v_.c, kind, pass, 1, elements);
    push(op, attention_core);
  }

  // One of bench_memops's own operators (softmax, layernorm, embedding, gelu).
  void memop(StepPhase phase, const std::string& name, MemopCase mc, std::int64_t calls,
             bool attention_core = false) {
    StepOperator op = make_op(StepFamily::memop, phase, name + " (eager)", calls * v_.m, "");
    op.memop = mc;
    push(op, attention_core);
  }

  // A batched per-head GEMM of the unfused attention (torch.bmm / matmul on [B·heads, ...]). It
  // computes the whole S x S score matrix (its hardware FLOPs); the model FLOPs are Megatron's,
  // the causal half, as the fused kernel's (add_attention in step_operators.cpp).
  void bmm(StepPhase phase, const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k,
           bool ta, bool tb, std::int64_t batch, std::int64_t calls) {
    StepOperator op =
        make_op(StepFamily::gemm, phase, name, calls * v_.m,
                "unfused attention: one GEMM per (sequence, head); qk: scores = "
                "q·kᵀ, dq = ds·k, dkᵀ = qᵀ·ds; pv: out = p·v, dp = do·vᵀ, dv = pᵀ·do");
    op.gemm.m = m, op.gemm.n = n, op.gemm.k = k, op.gemm.batch = batch;
    op.gemm.transa = ta, op.gemm.transb = tb;
    op.gemm.dtype = v_.c.dtype;
    op.gemm.out_dtype = gemm_output_dtype(v_.c.dtype);
    op.hardware_flops = op.gemm.flops();
    op.model_flops = op.hardware_flops / 2;
    push(op, true);
  }

 private:
  // Recomputation re-runs the forward kernels: all of the layer's with full, the attention
  // core's (scores, mask, softmax, the two batched GEMMs) with selective.
  void push(StepOperator op, bool attention_core) {
    op.attention_kernel = attention_core;
    out_.push_back(op);
    const Recompute r = v_.c.recompute;
    if (in_layers_ && op.phase == StepPhase::forward &&
        (r == Recompute::full || (r == Recompute::selective && attention_core)))
      out_.push_back(recomputed(op));
  }

  const StageView& v_;
  std::vector<StepOperator>& out_;
  bool in_layers_ = true;
};

constexpr StepPhase kFwd = StepPhase::forward;
constexpr StepPhase kBwd = StepPhase::backward;

// Hugging Face's LlamaRMSNorm, x * rsqrt(mean(x²) + eps) * w, as six eager kernels forward and
// eleven backward (autograd's nodes of pow, mean, add, rsqrt and the two muls, and the sum of
// the two gradients reaching x); LayerNorm is one fused ATen kernel each way.
void add_norm(EagerKernels& k, const StepConfig& c, const std::string& where, std::int64_t tokens,
              std::int64_t calls) {
  const std::int64_t H = c.model.hidden_size, n = tokens * H, T = tokens;
  if (c.model.norm == "layernorm") {
    for (MemPass p : {MemPass::fwd, MemPass::bwd})
      k.memop(p == MemPass::fwd ? kFwd : kBwd, where + " layernorm " + mem_pass_name(p),
              memop_case(c, MemOp::layernorm, p, T, H), calls);
    return;
  }
  const std::string s = where + " rmsnorm ";
  constexpr MemPass f = MemPass::fwd;
  k.kernel(kFwd, s + "pow", MemOp::scale, f, n, calls);  // x² reads and writes like a scale
  k.bytes(kFwd, s + "mean", n + T, calls);
  k.bytes(kFwd, s + "add eps, rsqrt", 2 * T, 2 * calls);
  // x * rstd and * weight: their broadcast operand (a row's or the hidden's) stays in cache
  k.kernel(kFwd, s + "x * rstd, * weight", MemOp::scale, f, n, 2 * calls);
  k.kernel(kBwd, s + "bwd grad * weight, grad * rstd", MemOp::scale, f, n, 2 * calls);
  k.kernel(kBwd, s + "bwd grad * x, grad * normed", MemOp::mul, f, n, 2 * calls);
  k.bytes(kBwd, s + "bwd sums (weight over tokens, rstd over hidden)", n + H, 2 * calls);
  k.bytes(kBwd, s + "bwd rsqrt, mean", 3 * T + n, 2 * calls);
  k.kernel(kBwd, s + "bwd pow (x * grad)", MemOp::mul, f, n, calls);
  k.kernel(kBwd, s + "bwd pow (* 2)", MemOp::scale, f, n, calls);
  k.kernel(kBwd, s + "bwd sum of the two paths", MemOp::add, f, n, 2 * calls);
}

// Rotary embedding of q or k (n elements) as torch writes it: x * cos + rotate_half(x) * sin,
// rotate_half = cat(-x2, x1).
void add_rope(EagerKernels& k, const std::string& what, std::int64_t n, std::int64_t calls) {
  const std::string s = "rope " + what + " ";
  constexpr MemPass f = MemPass::fwd;
  // cos and sin broadcast over the heads: a scale's traffic
  k.kernel(kFwd, s + "* cos, * sin", MemOp::scale, f, n, 2 * calls);
  k.kernel(kFwd, s + "neg half", MemOp::scale, f, n / 2, calls);
  k.kernel(kFwd, s + "cat", MemOp::copy, f, n, calls);
  k.kernel(kFwd, s + "add", MemOp::add, f, n, calls);
  k.kernel(kBwd, s + "bwd * cos, * sin", MemOp::scale, f, n, 2 * calls);
  k.kernel(kBwd, s + "bwd neg half", MemOp::scale, f, n / 2, calls);
  k.kernel(kBwd, s + "bwd cat of halves", MemOp::copy, f, n, calls);
  k.kernel(kBwd, s + "bwd sum of the two paths", MemOp::add, f, n, calls);
}

// PyTorch's unfused attention core over `batch` (sequence, head) pairs of S x S scores: q
// scaled, the per-head GEMMs, the causal mask built and added, the softmax, and their backward.
void add_eager_attention_core(EagerKernels& k, const StepConfig& c, std::int64_t nq,
                              std::int64_t batch, std::int64_t scores, std::int64_t L) {
  const std::int64_t S = c.seq(), d = c.model.head_dim;
  constexpr MemPass f = MemPass::fwd;
  k.kernel(kFwd, "attention q scale", MemOp::scale, f, nq, L, true);
  k.bmm(kFwd, "attn_qk fprop", S, S, d, false, true, batch, L);
  k.bytes(kFwd, "attention causal mask (S x S: ones, tril, fill)", 3 * 2 * S * S, L, true);
  // the mask (S x S) broadcast over the sequences and heads stays in cache: a scale's traffic
  k.kernel(kFwd, "attention mask add", MemOp::scale, f, scores, L, true);
  k.memop(kFwd, "attention softmax fwd", memop_case(c, MemOp::softmax, MemPass::fwd, batch * S, S),
          L, true);
  k.bmm(kFwd, "attn_pv fprop", S, d, S, false, false, batch, L);
  k.bmm(kBwd, "attn_pv bwd_dp", S, S, d, false, true, batch, L);
  k.bmm(kBwd, "attn_pv bwd_dv", S, d, S, true, false, batch, L);
  k.memop(kBwd, "attention softmax bwd", memop_case(c, MemOp::softmax, MemPass::bwd, batch * S, S),
          L, true);
  k.bmm(kBwd, "attn_qk bwd_dq", S, d, S, false, false, batch, L);
  k.bmm(kBwd, "attn_qk bwd_dk", d, S, S, true, false, batch, L);
  k.kernel(kBwd, "attention q scale bwd", MemOp::scale, f, nq, L, true);
}

// The biases of the layer's linears (attention_bias: q, k, v; attention_out_bias: o; mlp_bias:
// gate, up and down), each as ATen's addmm runs it: the bias broadcast into the output before the
// GEMM accumulates onto it (a copy_ writing T x N, its bias row in cache: a fill's traffic), and
// backward the bias gradient, dy summed over the tokens (T x N read, N written). The GEMM's own
// beta = 1 read of the output is in its captured time, not in an isolated one. On CUDA, ATen's
// addmm folds a 1-D bias into cuBLASLt's epilogue where it can (at::cuda::blas::gemm_and_bias,
// aten/src/ATen/native/cuda/Blas.cpp): there the copy is an upper bound of a few T x N writes.
void add_biases(EagerKernels& k, const ModelConfig& m, std::int64_t T, std::int64_t q_cols,
                std::int64_t kv_cols, std::int64_t mlp_cols, std::int64_t L) {
  const std::int64_t H = m.hidden_size, dense = m.dense_mlp_layers();
  struct Biased {
    std::string linear;
    std::int64_t cols, calls;
  };
  std::vector<Biased> biased;
  if (m.attention_bias)
    biased.insert(biased.end(),
                  {{"attn_q", q_cols, L}, {"attn_k", kv_cols, L}, {"attn_v", kv_cols, L}});
  if (m.attention_out_bias) biased.push_back({"attn_out", H, L});
  if (m.mlp_bias && dense > 0) {
    if (m.gated_mlp) biased.push_back({"mlp_gate", mlp_cols, dense});
    biased.push_back({"mlp_up", mlp_cols, dense});
    biased.push_back({"mlp_down", H, dense});
  }
  for (const auto& [linear, cols, calls] : biased) {
    k.kernel(kFwd, linear + " bias broadcast into addmm's output", MemOp::fill, MemPass::fwd,
             T * cols, calls);
    k.bytes(kBwd, linear + " bias gradient (sum over tokens)", T * cols + cols, calls);
  }
}

// GPT's learned position table [seqlen, H]: S rows looked up (positions 0..S-1, shared by the
// micro-batch's sequences) and added to the token embeddings; backward the add's gradient summed
// over the sequences, then the table's gradient as nn.Embedding's (zeroed, rows added in).
void add_position_embedding(EagerKernels& k, const StepConfig& c, std::int64_t T) {
  const ModelConfig& m = c.model;
  const std::int64_t S = c.seq(), H = m.hidden_size;
  MemopCase lookup = memop_case(c, MemOp::embedding, MemPass::fwd, S, H);
  lookup.vocab = m.seqlen;
  k.memop(kFwd, "position embedding fwd", lookup, 1);
  k.kernel(kFwd, "position embedding add", MemOp::add, MemPass::fwd, T * H, 1);
  k.bytes(kBwd, "position embedding add bwd: sum over the sequences", T * H + S * H, 1);
  MemopCase scatter = memop_case(c, MemOp::embedding, MemPass::bwd, S, H);
  scatter.vocab = m.seqlen;
  k.memop(kBwd, "position embedding bwd", scatter, 1);
}

// An expert MLP's kernels besides its GEMMs over `rows` x `width`, as the peer runs each expert,
// `calls` times: silu(gate) * up; backward the two products' gradients, silu's, and the sum of
// the gate's and up's input gradients (rows x H). Not gated: GELU each way.
void add_expert_mlp(EagerKernels& k, const StepConfig& c, const std::string& who, std::int64_t rows,
                    std::int64_t width, std::int64_t calls) {
  const std::int64_t n = rows * width;
  constexpr MemPass f = MemPass::fwd;
  if (!c.model.gated_mlp) {
    k.memop(kFwd, who + " gelu fwd", memop_case(c, MemOp::gelu, MemPass::fwd, rows, width), calls);
    k.memop(kBwd, who + " gelu bwd", memop_case(c, MemOp::gelu, MemPass::bwd, rows, width), calls);
    return;
  }
  k.kernel(kFwd, who + " silu", MemOp::silu, MemPass::fwd, n, calls);
  k.kernel(kFwd, who + " silu * up", MemOp::mul, f, n, calls);
  k.kernel(kBwd, who + " mul bwd (grad * up, grad * silu)", MemOp::mul, f, n, 2 * calls);
  k.kernel(kBwd, who + " silu bwd", MemOp::silu, MemPass::bwd, n, calls);
  k.kernel(kBwd, who + " sum of gate/up input gradients", MemOp::add, f, rows * c.model.hidden_size,
           calls);
}

// An MoE layer as the peer's MoE module runs it eagerly (Megatron's SequentialMLP, Hugging Face's
// loop over experts), on the rank's own T' = T/tp tokens (sequence parallel at tp > 1): the
// router's softmax in fp32 and top-k; the T'·k token copies sorted by expert and gathered
// (x[token]: an embedding lookup over the T' tokens' rows); each of the rank's experts'
// activation on its rows (a call per expert, as the loop runs them, at the rank's mean rows per
// expert); the outputs concatenated, scaled by the routing weights and index_add_-ed into zeros
// of [T', H] (an embedding's backward over the tokens, which zeroes its table too); the shared
// experts on every token of the tensor-parallel group, added. Backward mirrors it; the router's,
// the permute's and the shared experts' input gradients are summed.
void add_eager_moe(EagerKernels& k, const StepConfig& c, const ModelConfig& m, std::int64_t T) {
  const std::int64_t layers = m.moe_layers();
  if (layers == 0) return;
  const MoeConfig& e = *m.moe;
  const std::int64_t H = m.hidden_size, E = e.n_routed_experts, K = e.num_experts_per_tok;
  // the router, the permutes and the routing weights see the rank's own tokens: T / tp, the
  // sequence-parallel input Megatron-Core's MoE layers require at tp > 1
  const std::int64_t own = ceil_div(T, c.tp);
  const std::int64_t copies = own * K, Ie = e.moe_intermediate_size / c.expert_tp();
  const RankLoad load = busiest_expert_rank(c, T);
  const std::int64_t experts = E / c.ep, per_expert = ceil_div(load.total, experts);
  constexpr MemPass f = MemPass::fwd;
  const MemopCase base = step_memop_base(c);
  k.memop(kFwd, "moe router softmax fwd (fp32)",
          moe_router_softmax_case(base, MemPass::fwd, own, E), layers);
  k.bytes(kFwd, "moe top-k", own * E + 2 * copies, layers);
  k.bytes(kFwd, "moe copies sorted by expert (sort, bincount, // top-k)", 4 * copies, layers);
  k.memop(kFwd, "moe permute: the copies gathered (x[token])",
          moe_token_rows_case(base, MemPass::fwd, copies, own, H), layers);
  if (load.total > 0)
    add_expert_mlp(k, c, fmt::format("moe experts ({} rows each)", per_expert), per_expert, Ie,
                   experts * layers);
  k.kernel(kFwd, "moe experts' outputs cat", MemOp::copy, f, load.total * H, layers);
  k.bytes(kFwd, "moe routing weights gathered", 2 * copies, layers);
  k.kernel(kFwd, "moe outputs * routing weights", MemOp::scale, f, copies * H, layers);
  k.memop(kFwd, "moe unpermute: zeros, index_add_ of the copies",
          moe_token_rows_case(base, MemPass::bwd, copies, own, H), layers);
  const std::int64_t shared = e.n_shared_experts * e.moe_intermediate_size / c.tp;
  if (shared > 0) {
    add_expert_mlp(k, c, "moe shared experts", T, shared, layers);
    k.kernel(kFwd, "moe shared experts' output add", MemOp::add, f, own * H, layers);
  }
  k.memop(kBwd, "moe unpermute bwd: the tokens' gradients gathered",
          moe_token_rows_case(base, MemPass::fwd, copies, own, H), layers);
  k.kernel(kBwd, "moe outputs * routing weights bwd", MemOp::scale, f, copies * H, layers);
  k.kernel(kBwd, "moe routing weights' gradient: grad * output", MemOp::mul, f, copies * H, layers);
  k.bytes(kBwd, "moe routing weights' gradient: sum over the hidden", copies * H + copies, layers);
  k.bytes(kBwd, "moe routing weights gathered bwd (zeros, index_put_)", 3 * copies, layers);
  k.kernel(kBwd, "moe split bwd: cat of the experts' input gradients", MemOp::copy, f,
           load.total * H, layers);
  k.memop(kBwd, "moe permute bwd: zeros, index_put_ (accumulate) of the copies",
          moe_token_rows_case(base, MemPass::bwd, copies, own, H), layers);
  k.bytes(kBwd, "moe top-k bwd (zeros, scatter)", own * E + 2 * copies, layers);
  k.memop(kBwd, "moe router softmax bwd (fp32)",
          moe_router_softmax_case(base, MemPass::bwd, own, E), layers);
  k.kernel(kBwd,
           shared > 0 ? "moe input gradient sums (router, permute, shared experts)"
                      : "moe input gradient sum (router, permute)",
           MemOp::add, f, own * H, (shared > 0 ? 2 : 1) * layers);
}

}  // namespace

void add_eager_layer_kernels(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  const ModelConfig& m = v.model;
  EagerKernels k(v, out);
  const std::int64_t L = m.num_hidden_layers, B = c.micro_batch, S = c.seq();
  const std::int64_t T = c.tokens_per_micro_batch(), H = m.hidden_size, d = m.head_dim;
  const std::int64_t heads = m.num_attention_heads / c.tp;
  const std::int64_t kv = std::max<std::int64_t>(1, m.num_key_value_heads / c.tp);
  const std::int64_t nH = T * H, nq = T * heads * d, nkv = T * kv * d;
  const std::int64_t batch = B * heads, scores = batch * S * S;

  if (L > 0) {
    add_norm(k, c, "input", T, L);
    add_norm(k, c, "post-attention", T, L);
    // The norms' outputs feed three (q, k, v) and two (gate, up) projections: autograd sums
    // their input gradients; the residual stream's x feeds the norm and the residual add.
    constexpr MemPass f = MemPass::fwd;
    k.kernel(kBwd, "sum of q/k/v input gradients", MemOp::add, f, nH, 2 * L);
    if (m.gated_mlp && m.dense_mlp_layers() > 0)
      k.kernel(kBwd, "sum of gate/up input gradients", MemOp::add, f, nH, m.dense_mlp_layers());
    k.kernel(kBwd, "residual stream gradient sums", MemOp::add, f, nH, 2 * L);
    k.kernel(kFwd, "residual add", MemOp::add, f, nH, 2 * L);
    if (!m.learned_position_embeddings) {
      add_rope(k, "q", nq, L);
      add_rope(k, "k", nkv, L);
    }
    if (kv != heads) {  // GQA: k and v expanded to every query head, then made contiguous
      k.bytes(kFwd, "GQA repeat of k and v", nkv + nq, 2 * L, true);
      k.bytes(kBwd, "GQA repeat bwd: sum over the query heads", nq + nkv, 2 * L, true);
    }
    // PyTorch's math attention (torch 1.13's only CPU path; any torch's without a fused
    // kernel): q scaled, scores = q·kᵀ per head, the causal mask built and added, softmax,
    // out = p·v, then the heads transposed back into the hidden layout. With a fused core
    // (--attention-kernels fused: scaled_dot_product_attention's flash kernel, listed by
    // step_operators) only the transposes around it stay.
    if (c.attention() == Kernels::eager) add_eager_attention_core(k, c, nq, batch, scores, L);
    k.kernel(kFwd, "attention output transpose copy", MemOp::copy, f, nq, L, true);
    k.kernel(kBwd, "attention output transpose copy bwd", MemOp::copy, f, nq, L, true);
    const std::int64_t I = m.intermediate_size / c.tp, nI = T * I;
    add_biases(k, m, T, heads * d, kv * d, I, L);
    if (m.dense_mlp_layers() > 0) {
      const std::int64_t dense = m.dense_mlp_layers();
      if (m.gated_mlp) {
        k.kernel(kFwd, "mlp silu", MemOp::silu, MemPass::fwd, nI, dense);
        k.kernel(kFwd, "mlp silu * up", MemOp::mul, f, nI, dense);
        k.kernel(kBwd, "mlp mul bwd (grad * up, grad * silu)", MemOp::mul, f, nI, 2 * dense);
        k.kernel(kBwd, "mlp silu bwd", MemOp::silu, MemPass::bwd, nI, dense);
      } else {
        k.memop(kFwd, "mlp gelu fwd", memop_case(c, MemOp::gelu, MemPass::fwd, T, I), dense);
        k.memop(kBwd, "mlp gelu bwd", memop_case(c, MemOp::gelu, MemPass::bwd, T, I), dense);
      }
    }
    if (m.moe) add_eager_moe(k, c, m, T);
  }
  k.leave_layers();
  if (v.first()) {
    // nn.Embedding's dense backward zeroes a whole table-sized gradient, then adds the rows in:
    // bench_memops's embedding backward, which writes every row of the table (zero or a sum).
    k.memop(
        kFwd, "embedding fwd",
        [&] {
          MemopCase mc = memop_case(c, MemOp::embedding, MemPass::fwd, T, H);
          mc.vocab = m.vocab_size;
          return mc;
        }(),
        1);
    MemopCase scatter = memop_case(c, MemOp::embedding, MemPass::bwd, T, H);
    scatter.vocab = m.vocab_size;
    k.memop(kBwd, "embedding bwd", scatter, 1);
    if (m.learned_position_embeddings) add_position_embedding(k, c, T);
  }
  if (v.last()) {
    add_norm(k, c, "final", T, 1);
    // F.cross_entropy = log_softmax + nll_loss; nll's backward zero-fills a logits-sized
    // gradient before it scatters -1 into it.
    const std::int64_t V = ceil_div(m.vocab_size, c.tp);
    k.memop(kFwd, "loss log_softmax fwd", memop_case(c, MemOp::softmax, MemPass::fwd, T, V), 1);
    k.kernel(kBwd, "loss nll bwd zero fill", MemOp::fill, MemPass::fwd, T * V, 1);
    k.memop(kBwd, "loss log_softmax bwd", memop_case(c, MemOp::softmax, MemPass::bwd, T, V), 1);
  }
}

void add_eager_optimizer(const StageView& v, std::vector<StepOperator>& out) {
  const StepConfig& c = v.c;
  // torch.optim.AdamW's elementwise kernels per tensor of n elements (p: parameter, g:
  // gradient, m, v: moments, den: a fresh temporary), each as the bench_memops eager kernel of
  // its traffic and arithmetic, in PyTorch 2's order (_single_tensor_adam, _multi_tensor_adam's
  // _foreach_ ops; the 8 seen in a torch 2.11 step's trace on an H200): p *= 1 - lr·wd;
  // m.lerp_(g, 1 - b1) (reads m and g, writes m: add_'s traffic); v *= b2; v += (1 - b2)·g·g
  // (addcmul_); den = sqrt(v); den /= sqrt(bias correction); den += eps; p -= step·m / den
  // (addcdiv_). PyTorch 1.x (Debian's) ran m *= b1, then m += (1 - b1)·g: one pass more.
  struct Kernel {
    const char* name;
    MemOp op;
  };
  static const Kernel kernels[] = {
      {"p *= 1 - lr*wd", MemOp::scale_inplace}, {"m.lerp_(g, 1-b1)", MemOp::axpy_inplace},
      {"v *= b2", MemOp::scale_inplace},        {"v += (1-b2)*g*g", MemOp::axpy_inplace},
      {"den = sqrt(v)", MemOp::sqrt},           {"den /= bias corr", MemOp::scale_inplace},
      {"den += eps", MemOp::scale_inplace},     {"p -= step*m/den", MemOp::addcdiv_inplace}};
  const std::string impl = optimizer_impl_name(c.optimizer_impl);
  // single: once per parameter tensor; foreach: once over the rank's whole shard. Either is
  // timed in pieces of at most 2^28 elements (parameter_pass).
  std::vector<std::pair<ParameterPass, std::int64_t>> calls;  // pass -> how many such tensors
  if (c.optimizer_impl == OptimizerImpl::single) {
    for (const RankTensors& t : rank_parameter_tensors(c, v.stage)) {
      const std::int64_t shards = t.expert ? expert_optimizer_shards(c) : optimizer_shards(c);
      calls.push_back({parameter_pass(ceil_div(t.numel, shards)), t.count});
    }
  } else {
    calls.push_back({parameter_pass(optimizer_elements(c, v.stage)), 1});
  }
  for (const Kernel& kernel : kernels)
    for (const auto& [pass, count] : calls) {
      StepOperator op = make_op(
          StepFamily::memop, StepPhase::optimizer, fmt::format("adamw {} {}", impl, kernel.name),
          count * pass.calls,
          fmt::format("{}, {} elements per call", dtype_name(c.optimizer_dtype), pass.elements));
      MemopCase mc = memop_case(c, kernel.op, MemPass::fwd, 1, pass.elements);
      mc.dtype = c.optimizer_dtype;
      op.memop = mc;
      // the framework launches a _foreach_ operator once, a single-tensor one once a tensor
      op.launches = c.optimizer_impl == OptimizerImpl::single ? count : 1;
      out.push_back(op);
    }
}

}  // namespace opbench
