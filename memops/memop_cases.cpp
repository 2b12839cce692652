#include "memops/memop_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "common/error.hpp"
#include "common/int_math.hpp"
#include "common/json_reader.hpp"
#include "common/param_layout.hpp"
#include "common/text.hpp"
#include "memops/memop_operands.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr std::int64_t kSweepHeadDim = 128;

bool wanted(const std::vector<MemOp>& ops, MemOp op) {
  return ops.empty() || std::find(ops.begin(), ops.end(), op) != ops.end();
}

// The passes of `passes` the operator has (fwd only for the operators without a backward).
std::vector<MemPass> passes_of(MemOp op, const std::vector<MemPass>& passes) {
  std::vector<MemPass> out;
  for (MemPass p : passes)
    if (p == MemPass::fwd || has_backward(op)) out.push_back(p);
  return out;
}

// Every parameter of the model: what the optimizer steps over, before tp and dp split it.
std::int64_t model_parameters(const ModelConfig& m) {
  std::int64_t total = 0;
  for (const auto& module : root_modules(m))
    total += module.numel();
  for (const auto& module : decoder_layer_modules(m, false))
    total += module.numel() * m.dense_mlp_layers();
  if (m.moe)
    for (const auto& module : decoder_layer_modules(m, true))
      total += module.numel() * m.moe_layers();
  return total;
}

}  // namespace

void validate(const MemopCase& c, const std::string& where) {
  auto fail = [&](const std::string& what) { throw bad_input(fmt::format("{}: {}", where, what)); };
  if (c.rows < 1) fail(fmt::format("rows must be at least 1, got {}", c.rows));
  if (c.cols < 1) fail(fmt::format("cols must be at least 1, got {}", c.cols));
  if (!memop_accepts(c.op, c.dtype))
    fail(fmt::format("{} does not take dtype {}", memop_name(c.op), dtype_name(c.dtype)));
  if (c.pass == MemPass::bwd && !has_backward(c.op))
    fail(fmt::format("{} has no backward pass", memop_name(c.op)));
  if (const auto problem = memop_shape_problem(c)) fail(problem->why);
}

std::vector<MemopCase> model_memop_cases(const ModelConfig& m, const MemopModelRun& run,
                                         const std::vector<MemOp>& ops,
                                         const std::vector<MemPass>& passes, DType dtype) {
  if (run.tp < 1) throw bad_input(fmt::format("--tp: must be at least 1, got {}", run.tp));
  if (run.dp < 1) throw bad_input(fmt::format("--dp: must be at least 1, got {}", run.dp));
  const std::vector<std::int64_t> lengths =
      run.seqlens.empty() ? std::vector<std::int64_t>{m.seqlen} : run.seqlens;
  const std::int64_t L = m.num_hidden_layers, H = m.hidden_size, tp = run.tp;
  std::vector<MemopCase> out;
  for (std::int64_t seqlen : lengths)
    for (std::int64_t mb : run.micro_batches) {
      const std::int64_t tokens = mb * seqlen;
      // Sequence parallelism splits the tokens of norms and residual adds over the tp ranks.
      if (run.sequence_parallel) require_sequence_split(seqlen, tp);
      const std::int64_t sp_tokens = run.sequence_parallel ? tokens / tp : tokens;
      MemopCase run_case;  // this run's, its operator and shape to fill in
      run_case.report = run_case.source = m.name;
      run_case.dtype = dtype;
      run_case.tp = tp;
      run_case.micro_batch = mb;
      run_case.seqlen = seqlen;
      auto add = [&](MemOp op, std::int64_t rows, std::int64_t cols, std::int64_t calls,
                     const std::string& note) -> MemopCase& {
        MemopCase c = run_case;
        c.op = op;
        c.rows = rows;
        c.cols = cols;
        c.dtype = memop_dtype(op, dtype);
        c.calls_per_step = calls;
        c.note = note;
        out.push_back(c);
        return out.back();
      };
      auto add_passes = [&](MemOp op, std::int64_t rows, std::int64_t cols, std::int64_t calls,
                            const std::string& note) {
        if (!wanted(ops, op)) return;
        for (MemPass p : passes_of(op, passes))
          add(op, rows, cols, calls, note).pass = p;
      };
      const MemOp norm = m.norm == "layernorm" ? MemOp::layernorm : MemOp::rmsnorm;
      add_passes(norm, sp_tokens, H, 2 * L + 1, "two per layer and the final norm");
      add_passes(MemOp::add, sp_tokens, H, 2 * L, "residual adds: two per layer");
      if (m.dense_mlp_layers() > 0) {
        if (m.intermediate_size % tp != 0)
          throw bad_input(
              fmt::format("--tp {}: does not divide intermediate_size ({}) of model '{}'", tp,
                          m.intermediate_size, m.name));
        add_passes(m.gated_mlp ? MemOp::swiglu : MemOp::gelu, tokens, m.intermediate_size / tp,
                   m.dense_mlp_layers(), m.moe ? "the dense layers' MLP" : "");
      }
      if (wanted(ops, MemOp::rope) && !m.learned_position_embeddings) {
        const TpHeads split = heads_per_tp_rank(m, tp);
        // MLA rotates only the rope part of q per head and one shared rope key per token.
        const std::int64_t head_dim = m.mla ? m.mla->qk_rope_head_dim : m.head_dim;
        const std::int64_t kv = m.mla ? 1 : split.kv;
        for (MemPass p : passes_of(MemOp::rope, passes)) {
          MemopCase& c =
              add(MemOp::rope, tokens, (split.q + kv) * head_dim, L,
                  m.mla ? "MLA: the rope dims of q and the shared rope key" : split.note);
          c.pass = p;
          c.heads = split.q;
          c.kv_heads = kv;
          c.head_dim = head_dim;
        }
      }
      add_passes(MemOp::softmax, mb * (m.num_attention_heads / tp) * seqlen, seqlen, L,
                 "the attention scores' softmax of unfused attention (flash attention fuses it)");
      const std::int64_t vocab = ceil_div(m.vocab_size, tp);  // vocabulary-parallel, padded
      add_passes(MemOp::cross_entropy, tokens, vocab, 1, "vocabulary-parallel over tp");
      if (wanted(ops, MemOp::embedding))
        for (MemPass p : passes_of(MemOp::embedding, passes)) {
          MemopCase& c = add(MemOp::embedding, tokens, H, 1, "vocabulary-parallel over tp");
          c.pass = p;
          c.vocab = vocab;
        }
      // Mixed precision keeps fp32 master weights and writes the bf16 parameters back.
      const MemOp adam = dtype == DType::fp32 ? MemOp::adamw : MemOp::adamw_bf16;
      if (run.parameter_passes && m.tie_word_embeddings && wanted(ops, MemOp::add)) {
        const ParameterPass pass = tied_embedding_gradient_pass(m, tp);
        add(MemOp::add, 1, pass.elements, pass.calls,
            fmt::format("the tied table's gradient sum (LM head's + embedding's), {} x {} / tp "
                        "{}{}",
                        m.vocab_size, H, tp, parameter_pass_note(pass)));
      }
      if (run.parameter_passes && (wanted(ops, MemOp::adamw) || wanted(ops, MemOp::adamw_bf16))) {
        const ParameterPass pass = parameter_pass(ceil_div(model_parameters(m), tp * run.dp));
        add(adam, 1, pass.elements, pass.calls,
            fmt::format("the rank's shard: {} parameters / tp {} / dp {}{}", model_parameters(m),
                        tp, run.dp, parameter_pass_note(pass)));
      }
      add_passes(MemOp::fp8_quantize, sp_tokens, H, 2 * L,
                 "fp8 training: the inputs of the QKV and gate/up GEMMs");
      if (run.moe_layers && m.moe && m.moe_layers() > 0)
        for (MoeMemop& x : moe_layer_memops(m, run_case,
                                            {.tokens = tokens,
                                            .tp = tp,
                                            .routed = tokens * m.moe->num_experts_per_tok,
                                            .local_experts = m.moe->n_routed_experts})) {
          if (!wanted(ops, x.c.op) ||
              std::find(passes.begin(), passes.end(), x.c.pass) == passes.end())
            continue;
          x.c.note = "MoE " + x.label + " (every expert on the rank, balanced routing)";
          out.push_back(std::move(x.c));
        }
    }
  merge_same_cases(out);
  return out;
}

void merge_same_cases(std::vector<MemopCase>& cases) {
  auto key = [](const MemopCase& c) {
    return std::tuple{c.report,   c.source,   c.op,    c.pass,  c.rows, c.cols,        c.heads,
                      c.kv_heads, c.head_dim, c.vocab, c.dtype, c.tp,   c.micro_batch, c.seqlen};
  };
  std::vector<MemopCase> merged;
  std::map<decltype(key(cases.front())), std::size_t> seen;
  for (MemopCase& c : cases) {
    const auto [it, fresh] = seen.emplace(key(c), merged.size());
    if (fresh) {
      merged.push_back(std::move(c));
      continue;
    }
    MemopCase& first = merged[it->second];
    first.calls_per_step += c.calls_per_step;
    if (!c.note.empty() && first.note.find(c.note) == std::string::npos)
      first.note += (first.note.empty() ? "" : "; ") + c.note;
  }
  cases = std::move(merged);
}

MemopCase moe_router_softmax_case(MemopCase base, MemPass pass, std::int64_t tokens,
                                  std::int64_t experts) {
  base.op = MemOp::softmax;
  base.pass = pass;
  base.rows = tokens;
  base.cols = experts;
  base.dtype = DType::fp32;
  return base;
}

MemopCase moe_token_rows_case(MemopCase base, MemPass pass, std::int64_t copies,
                              std::int64_t tokens, std::int64_t hidden) {
  base.op = MemOp::embedding;
  base.pass = pass;
  base.rows = copies;
  base.cols = hidden;
  base.vocab = tokens;
  return base;
}

std::vector<MoeMemop> moe_layer_memops(const ModelConfig& m, const MemopCase& base,
                                       const MoeLayerShape& shape) {
  const std::int64_t tokens = shape.tokens, tp = shape.tp, routed = shape.routed;
  std::vector<MoeMemop> out;
  if (!m.moe || m.moe_layers() == 0) return out;
  const MoeConfig& e = *m.moe;
  // the router runs on the rank's own tokens: tokens / tp, the sequence-parallel input
  // Megatron-Core's MoE layers require at tp > 1; the permutes on them too, or on the gathered
  // tokens of the all-gather dispatcher's group, of which the rank's experts take `routed` copies
  const std::int64_t own = ceil_div(tokens, tp), H = m.hidden_size;
  const bool gathered = shape.allgather_group > 1;
  const std::int64_t copies = gathered ? routed : own * e.num_experts_per_tok;
  const std::int64_t source = gathered ? own * shape.allgather_group : own;
  auto add = [&](const std::string& label, bool backward, MemopCase c) {
    c.calls_per_step = m.moe_layers();
    c.note = label;
    out.push_back({label, backward, std::move(c)});
  };
  auto elementwise = [&](MemOp op, MemPass pass, std::int64_t rows, std::int64_t cols) {
    MemopCase c = base;
    c.op = op;
    c.pass = pass;
    c.rows = rows;
    c.cols = cols;
    return c;
  };
  constexpr MemPass fwd = MemPass::fwd, bwd = MemPass::bwd;
  const std::int64_t E = e.n_routed_experts;
  add("router softmax fwd (fp32)", false, moe_router_softmax_case(base, fwd, own, E));
  add("router softmax bwd (fp32)", true, moe_router_softmax_case(base, bwd, own, E));
  add("permute: the copies gathered", false, moe_token_rows_case(base, fwd, copies, source, H));
  add("permute bwd: the copies' gradients added into their tokens", true,
      moe_token_rows_case(base, bwd, copies, source, H));
  add("unpermute: the copies weighted and added into their tokens", false,
      moe_token_rows_case(base, bwd, copies, source, H));
  add("unpermute bwd: the tokens' gradients gathered", true,
      moe_token_rows_case(base, fwd, copies, source, H));
  // The routing weights' gradient, a dot product of each copy's saved output with its gradient:
  // its bytes (T·k x H read) as a copy's.
  add("unpermute bwd: the routing weights' gradient", true,
      elementwise(MemOp::copy, fwd, 1, (copies * H + 1) / 2));
  if (shape.allgather_group == 0 && shape.local_experts > 1 && routed > 0) {
    add("sort by local expert: the received copies reordered", false,
        elementwise(MemOp::copy, fwd, routed, H));
    add("sort by local expert bwd", true, elementwise(MemOp::copy, fwd, routed, H));
    add("unsort: the experts' outputs back in their ranks' order", false,
        elementwise(MemOp::copy, fwd, routed, H));
    add("unsort bwd", true, elementwise(MemOp::copy, fwd, routed, H));
  }
  const MemOp act = m.gated_mlp ? MemOp::swiglu : MemOp::gelu;
  const std::int64_t width = e.moe_intermediate_size / (shape.etp > 0 ? shape.etp : tp),
                     shared_width = e.n_shared_experts * e.moe_intermediate_size / tp;
  for (MemPass p : {fwd, bwd}) {
    if (routed > 0)
      add(fmt::format("routed experts: {} tokens", routed), p == bwd,
          elementwise(act, p, routed, width));
    if (e.n_shared_experts > 0)
      add("shared experts", p == bwd, elementwise(act, p, tokens, shared_width));
  }
  return out;
}

ParameterPass parameter_pass(std::int64_t elements) {
  constexpr std::int64_t kMaxElementsPerCall = std::int64_t{1} << 28;
  const std::int64_t calls = std::max<std::int64_t>(1, ceil_div(elements, kMaxElementsPerCall));
  return {.elements = ceil_div(elements, calls), .calls = calls};
}

ParameterPass tied_embedding_gradient_pass(const ModelConfig& m, std::int64_t tp) {
  return parameter_pass(ceil_div(m.vocab_size, tp) * m.hidden_size);
}

std::string parameter_pass_note(const ParameterPass& pass) {
  if (pass.calls == 1) return "";
  return fmt::format("; in {} calls of {} elements", pass.calls, pass.elements);
}

std::vector<MemopCase> memop_shape_file_cases(const std::string& path,
                                              const std::vector<DType>& dtypes) {
  return memop_cases_from_json(load_json_file(path), path, dtypes);
}

std::vector<MemopCase> memop_cases_from_json(const nlohmann::json& doc, const std::string& path,
                                             const std::vector<DType>& dtypes) {
  std::vector<MemopCase> out;
  for_each_entry(doc, path, "name", [&](JsonEntry& e) {
    const std::string where = e.where();
    e.get_optional_string("name");
    MemopCase c;
    c.report = "shapes";
    c.source = "shapes";
    const std::string op = e.get_string("op");
    try {
      c.op = parse_memop(op, "");
    } catch (const Error& err) {
      e.fail("op", err.what());
    }
    c.rows = e.get_int("rows", 1, kMaxDim);
    c.cols = e.get_int("cols", 1, kMaxDim);
    c.heads = e.get_optional_int("heads", 1, kMaxDim).value_or(0);
    c.kv_heads = e.get_optional_int("kv_heads", 1, kMaxDim).value_or(c.heads);
    c.head_dim = e.get_optional_int("head_dim", 1, kMaxDim).value_or(0);
    c.vocab = e.get_optional_int("vocab", 1, kMaxDim).value_or(0);
    std::vector<MemPass> entry_passes{MemPass::fwd, MemPass::bwd};
    if (auto p = e.get_optional_string("pass")) {
      const std::string lower = to_lower(*p);
      if (lower == "fwd")
        entry_passes = {MemPass::fwd};
      else if (lower == "bwd")
        entry_passes = {MemPass::bwd};
      else
        e.fail("pass", fmt::format("'{}' is not fwd or bwd", *p));
      if (entry_passes[0] == MemPass::bwd && !has_backward(c.op))
        e.fail("pass", fmt::format("{} has no backward pass", op));
    }
    std::vector<DType> entry_dtypes;
    if (auto d = e.get_optional_string("dtype")) {
      try {
        entry_dtypes = {parse_dtype(*d)};
      } catch (const Error& err) {
        e.fail("dtype", err.what());
      }
      if (!memop_accepts(c.op, entry_dtypes[0]))
        e.fail("dtype", fmt::format("{} does not take dtype {}", op, *d));
    } else {
      for (DType t : dtypes)
        if (std::find(entry_dtypes.begin(), entry_dtypes.end(), memop_dtype(c.op, t)) ==
            entry_dtypes.end())
          entry_dtypes.push_back(memop_dtype(c.op, t));
    }
    e.reject_unknown_keys();
    if (const auto problem = memop_shape_problem(c)) e.fail(problem->field, problem->why);
    for (DType t : entry_dtypes)
      for (MemPass p : passes_of(c.op, entry_passes)) {
        MemopCase typed = c;
        typed.dtype = t;
        typed.pass = p;
        validate(typed, where);
        out.push_back(std::move(typed));
      }
  });
  return out;
}

std::vector<MemopCase> memop_sweep_cases(const std::vector<MemOp>& ops,
                                         const std::vector<MemPass>& passes,
                                         const std::vector<std::int64_t>& sizes, std::int64_t cols,
                                         std::int64_t vocab, const std::vector<DType>& dtypes) {
  std::vector<MemopCase> out;
  // What cannot be honoured is refused rather than changed: a sweep's rope has heads of 128 (as
  // many kv heads as query heads), so its rows are whole pairs of heads; and a size is at least
  // one row, each size its own number of rows (1000 and 5000 elements at 4096 columns were both
  // measured as one row of 4096).
  const std::vector<MemOp> swept = ops.empty() ? all_memops() : ops;
  if (std::find(swept.begin(), swept.end(), MemOp::rope) != swept.end() &&
      cols % (2 * kSweepHeadDim) != 0)
    throw bad_input(fmt::format(
        "--cols {}: rope sweeps rotate heads of {} with as many kv heads as query heads, so "
        "--cols must be a multiple of {} (or leave rope out of --op)",
        cols, kSweepHeadDim, 2 * kSweepHeadDim));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < cols)
      throw bad_input(
          fmt::format("--size {}: below one row of --cols {}; give sizes of at least "
                      "{} elements, or a smaller --cols",
                      sizes[i], cols, cols));
    for (std::size_t j = 0; j < i; ++j)
      if (sizes[i] / cols == sizes[j] / cols)
        throw bad_input(fmt::format(
            "--size {} and {}: both are {} row{} of --cols {}, the same case; give sizes that "
            "differ by a row at least",
            sizes[j], sizes[i], sizes[i] / cols, sizes[i] / cols == 1 ? "" : "s", cols));
  }
  for (MemOp op : swept)
    for (std::int64_t size : sizes)
      for (MemPass p : passes_of(op, passes)) {
        std::vector<DType> op_dtypes;
        for (DType t : dtypes)
          if (std::find(op_dtypes.begin(), op_dtypes.end(), memop_dtype(op, t)) == op_dtypes.end())
            op_dtypes.push_back(memop_dtype(op, t));
        for (DType t : op_dtypes) {
          MemopCase c;
          c.report = "sweep";
          c.source = "sweep";
          c.op = op;
          c.pass = p;
          c.dtype = t;
          c.cols = cols;
          if (op == MemOp::rope) {
            // Heads of 128 as in Llama, as many kv heads as query heads, filling cols.
            c.head_dim = kSweepHeadDim;
            c.heads = c.kv_heads = std::max<std::int64_t>(1, cols / (2 * kSweepHeadDim));
            c.cols = 2 * c.heads * kSweepHeadDim;
          }
          if (op == MemOp::embedding) c.vocab = vocab;
          c.rows = std::max<std::int64_t>(1, size / c.cols);
          if (size % c.cols != 0)
            c.note = fmt::format("{} elements rounded to {} rows of {}", size, c.rows, c.cols);
          out.push_back(std::move(c));
        }
      }
  return out;
}

}  // namespace opbench
