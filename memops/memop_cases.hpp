#pragma once
// The cases a bench_memops run measures: the memory-bound operators of a model's training step
// on one rank, an explicit shapes file, or sweeps of element counts (docs/formulas.md,
// "Memory-bound operators").
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.hpp"
#include "memops/memop.hpp"

namespace opbench {

struct MemopModelRun {
  std::int64_t tp = 1;  // tensor parallelism, with sequence parallelism for norms and adds
  // Norms, residual adds and the fp8 casts on tokens / tp (tp must split each sequence); false:
  // on every token (bench_step --no-sequence-parallel).
  bool sequence_parallel = true;
  std::int64_t dp = 1;  // data-parallel shards of the optimizer state (ZeRO / FSDP)
  std::vector<std::int64_t> micro_batches{1};
  std::vector<std::int64_t> seqlens;  // empty: the model's own
  // The passes over parameters (AdamW, the tied table's gradient sum); bench_step lists its own.
  bool parameter_passes = true;
  // An MoE model's layers (moe_layer_memops, every expert on the rank); bench_step lists them
  // with its own expert parallelism and routing.
  bool moe_layers = true;
};

// The operators of one training step of `model` on one rank, each with its calls per step, in
// `ops` (every operator the model has, when empty) and `passes`. Norms, residual adds and the
// fp8 casts of the norms' outputs see tokens / tp rows (sequence parallelism); activations,
// rotary embedding, softmax, cross-entropy and the embedding see every token of the rank's
// tensor-parallel slice; AdamW updates the rank's shard of the parameters (numel / tp / dp); a
// tied model's table gets its gradient sum (tied_embedding_gradient_pass).
std::vector<MemopCase> model_memop_cases(const ModelConfig& model, const MemopModelRun& run,
                                         const std::vector<MemOp>& ops,
                                         const std::vector<MemPass>& passes, DType dtype);

// An MoE layer's memory-bound operators as Megatron runs them with grouped GEMMs, each fwd and
// bwd, once per MoE layer: the router's softmax over the E experts in fp32 (T rows); the
// permute, the T·k token copies gathered in the experts' order (an embedding lookup over a
// vocabulary of the T tokens), and backward their gradients added back into the tokens (its
// backward); the unpermute, the copies weighted and added into their tokens (an embedding's
// backward), and backward the tokens' gradients gathered; the routed experts' activation over the
// `routed` rows the rank's experts receive (T·k with every expert on the rank) and the shared
// experts' over the T tokens. `label` names each for bench_step's operator list and
// bench_memops's note. bench_memops --model and bench_step list the same cases, so bench_step
// --from-reports finds them.
// Each case is `base` (the run: model, dtype, tp, micro-batch, sequence) with the operator, pass,
// shape, calls per step and, as its note, the label filled in.
struct MoeMemop {
  std::string label;
  bool backward = false;  // runs in the step's backward (not the same as c.pass: the unpermute
                          // is an embedding's backward in the forward)
  MemopCase c;
};
// Where an MoE layer's tokens go on one rank.
struct MoeLayerShape {
  std::int64_t tokens = 0;  // a micro-batch's
  std::int64_t tp = 1;      // the router and the permutes see tokens / tp (sequence parallel, as
                            // Megatron-Core's MoE layers require at tp > 1)
  std::int64_t routed = 0;  // the copies the rank's experts receive: their activation's rows
  std::int64_t etp = 0;     // the ranks splitting each expert's columns (0: tp); shared experts: tp
  // The routed experts on the rank (E / ep). With more than one, the all-to-all dispatcher sorts
  // the `routed` copies it received by local expert after the all-to-all (and the etp gather),
  // and back before the combine: Megatron-Core's sort_chunks_by_idxs, a copy of them each way.
  std::int64_t local_experts = 1;
  // 0: the all-to-all dispatcher, whose permute takes the rank's own tokens. Else Megatron-Core's
  // all-gather dispatcher over that many ranks (etp · ep): its permute picks the `routed` copies
  // for the rank's experts out of the group's gathered tokens (its own where the group is 1),
  // already in expert order (no sort), and its unpermute adds them back into that whole buffer.
  std::int64_t allgather_group = 0;
};
std::vector<MoeMemop> moe_layer_memops(const ModelConfig& m, const MemopCase& base,
                                       const MoeLayerShape& shape);

// The two MoE shapes both of bench_step's plans time, as cases of `base`'s run: the router's
// softmax over the E experts of `tokens` rows, in fp32 whatever the model's dtype, as frameworks
// run it; and the token copies moved between the tokens' rows and the experts' order, `copies`
// rows of the hidden gathered from a table of `tokens` rows (fwd: x[token], the permute) or added
// into a zeroed one (bwd: index_add_, the unpermute), exactly an embedding's lookup and its
// backward over a vocabulary of the tokens.
MemopCase moe_router_softmax_case(MemopCase base, MemPass pass, std::int64_t tokens,
                                  std::int64_t experts);
MemopCase moe_token_rows_case(MemopCase base, MemPass pass, std::int64_t copies,
                              std::int64_t tokens, std::int64_t hidden);

// The cases of `cases` that are the same case (operator, pass, shape, dtype, model run) become
// one, its calls per step summed and its notes joined, in first-seen order: an MoE layer's permute
// and its unpermute's backward are one gather, and the router's fp32 softmax is the same case
// under every --dtype.
void merge_same_cases(std::vector<MemopCase>& cases);

// An elementwise pass over a rank's parameters (AdamW, the gradient accumulation add) as a
// model's cases time it: `calls` equal calls of `elements` (at most 2^28) that cover them all.
// No framework runs one kernel over every parameter either (its optimizers loop over tensors or
// tensor lists); a memory-bound kernel's time is linear in its elements far beyond the L2; and a
// piece's operands fit any GPU (fused AdamW over an 8B model's fp32 state needs about 90 GiB at
// once, over one piece 3 GiB), so an 80 GB GPU measures every operator of the step. bench_memops
// --model and bench_step cut the same pieces, so bench_step --from-reports finds the rows.
struct ParameterPass {
  std::int64_t elements = 0;
  std::int64_t calls = 0;
};
ParameterPass parameter_pass(std::int64_t elements);
// "" for one call, else "; in N calls of E elements" for the operator's note.
std::string parameter_pass_note(const ParameterPass& pass);

// tie_word_embeddings: the shared [vocab, hidden] table gets a gradient from the LM head and one
// from the embedding, which autograd adds (an `add` once a micro-batch): over the rank's vocab/tp
// rows, in parameter_pass's pieces. bench_memops --model and bench_step cut the same ones.
ParameterPass tied_embedding_gradient_pass(const ModelConfig& m, std::int64_t tp);

// configs/memop_shapes.json: [{op, rows, cols, pass?, dtype?, heads?, kv_heads?, head_dim?,
// vocab?, name?}]; an entry without pass runs fwd and, where the operator has one, bwd; without
// dtype, every dtype of `dtypes` the operator takes.
std::vector<MemopCase> memop_shape_file_cases(const std::string& path,
                                              const std::vector<DType>& dtypes);
std::vector<MemopCase> memop_cases_from_json(const nlohmann::json& doc, const std::string& path,
                                             const std::vector<DType>& dtypes);

// --op/--size sweeps: every operator of `ops` at every element count of `sizes`, in rows of
// `cols` elements (rope: heads of 128 with as many kv heads; embedding: a table of `vocab` rows).
std::vector<MemopCase> memop_sweep_cases(const std::vector<MemOp>& ops,
                                         const std::vector<MemPass>& passes,
                                         const std::vector<std::int64_t>& sizes, std::int64_t cols,
                                         std::int64_t vocab, const std::vector<DType>& dtypes);

// Throws bad_input naming `where` for a case that cannot be run (a zero size, a dtype the
// operator does not take, rope without heads, an embedding without a vocabulary).
void validate(const MemopCase& c, const std::string& where);

}  // namespace opbench
