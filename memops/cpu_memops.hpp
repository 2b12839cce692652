#pragma once
// The memory-bound operators on the CPU: vectorisable loops (contiguous, branch-free inner loops
// that GCC -O3 vectorises) spread over every core with parallel_for, in fp32 (bf16 where the
// operator fixes it). Elementwise operators go in chunks of 64K elements, row operators in
// chunks of whole rows of about as many elements. The arithmetic is memops/memop_math.hpp's.
//
// Layouts: row-major [rows, cols]. Saved statistics (rstd, mean), losses and amax are fp32; ids
// and targets int64.
#include <cstddef>
#include <cstdint>

#include "memops/memop.hpp"
#include "memops/memop_math.hpp"
#include "memops/memop_operands.hpp"

namespace opbench::cpu_memops {

// The case's operator on one set of its operands (host addresses, by memop_operands' names, and
// the norms' backward workspace of norm_bwd_workspace_floats): the CPU's one dispatch, a row for
// each operator and pass beside the loops below.
void run(const MemopCase& c, const OperandAddresses& operands);

// The pointers of an elementwise operator (memops/elementwise.hpp): `out[0]` is also the first
// value an in-place kernel reads (the operand it updates); `in` holds the other inputs, in the
// order the kernel names them. Unused entries stay null.
struct ElementwisePointers {
  const float* in[3] = {};
  float* out[2] = {};
};
// The elementwise kernel of `op` and `pass` over n elements (add, the activations, the eager
// kernels).
void run_elementwise(MemOp op, MemPass pass, const ElementwisePointers& p, std::int64_t n);

// y = x rstd w with rstd = 1/sqrt(mean(x^2) + kRmsNormEps) per row (saved for the backward).
void rmsnorm_fwd(const float* x, const float* w, float* y, float* rstd, std::int64_t rows,
                 std::int64_t cols);
// dx = rstd (w dy - x rstd^2 mean(w dy x)); dw = sum over rows of dy x rstd. `workspace` holds
// norm_bwd_workspace_floats(rows, cols) floats (the per-chunk partial sums of dw, and db).
void rmsnorm_bwd(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
                 float* dw, float* workspace, std::int64_t rows, std::int64_t cols);

// The residual add fused before RMSNorm: h = x + residual (written), y = h rstd w with
// rstd = 1/sqrt(mean(h^2) + kRmsNormEps) per row (written).
void add_rmsnorm_fwd(const float* x, const float* residual, const float* w, float* y, float* h,
                     float* rstd, std::int64_t rows, std::int64_t cols);

// y = (x - mean) rstd w + b, the biased variance, kLayerNormEps.
void layernorm_fwd(const float* x, const float* w, const float* b, float* y, float* mean,
                   float* rstd, std::int64_t rows, std::int64_t cols);
// With xhat = (x - mean) rstd and g = w dy: dx = rstd (g - mean(g) - xhat mean(g xhat));
// dw = sum over rows of dy xhat; db = sum over rows of dy.
void layernorm_bwd(const float* dy, const float* x, const float* w, const float* mean,
                   const float* rstd, float* dx, float* dw, float* db, float* workspace,
                   std::int64_t rows, std::int64_t cols);

// The floats rmsnorm_bwd and layernorm_bwd need as workspace: a partial dw and db per chunk.
std::int64_t norm_bwd_workspace_floats(std::int64_t rows, std::int64_t cols);

// Softmax over each row (the max subtracted first); backward dx = y (dy - sum(y dy)).
void softmax_fwd(const float* x, float* y, std::int64_t rows, std::int64_t cols);
void softmax_bwd(const float* y, const float* dy, float* dx, std::int64_t rows, std::int64_t cols);

// The rotary tables of positions 0 .. rows-1: cos and sin, [rows, head_dim/2] each (HF's
// cos/sin of [rows, head_dim] hold each value twice; this is the half that differs).
void rope_tables(float* cos, float* sin, std::int64_t rows, std::int64_t head_dim);
// Rotary embedding of `vectors` heads of head_dim per row (q's heads then k's, side by side in
// one row of (heads + kv_heads) head_dim), the row's index being the position; pairs i and
// i + head_dim/2 (NeoX / HF Llama). backward: rotate the gradient by -theta.
void rope(const float* x, const float* cos, const float* sin, float* y, std::int64_t rows,
          std::int64_t vectors, std::int64_t head_dim, bool backward);

// Per row: loss = logsumexp(x) - x[target], and the logits' gradient (softmax(x) - onehot) / rows
// (the gradient of the mean loss, as torch's reduction='mean'); the loss is written per token.
void cross_entropy(const float* logits, const std::int64_t* targets, float* dlogits, float* loss,
                   std::int64_t rows, std::int64_t cols);

// y[r] = table[ids[r]]: rows of cols from a table of vocab rows.
void embedding_fwd(const float* table, const std::int64_t* ids, float* y, std::int64_t rows,
                   std::int64_t cols);
// dtable = 0, then dtable[ids[r]] += dy[r]; tokens with the same id add up.
void embedding_bwd(const float* dy, const std::int64_t* ids, float* dtable, std::int64_t rows,
                   std::int64_t cols, std::int64_t vocab);

// One AdamW step over n elements, in place: parameters, fp32 gradient, both moments.
void adamw(float* param, const float* grad, float* m, float* v, std::int64_t n,
           const memop_math::AdamWParams& params);
// Mixed precision: fp32 master parameters and moments, a bf16 gradient, and the updated
// parameters written back as bf16 too.
void adamw_bf16(float* param, const std::uint16_t* grad, float* m, float* v,
                std::uint16_t* param_bf16, std::int64_t n, const memop_math::AdamWParams& params);

void cast_to_bf16(const float* x, std::uint16_t* y, std::int64_t n);
void cast_to_fp32(const std::uint16_t* x, float* y, std::int64_t n);

// y = e4m3(x scale) (saturating) and amax = max |x| of the unscaled input, in one pass over x:
// delayed scaling, where the scale comes from an earlier step's amax. The codes come from a
// table of fp8_e4m3_encode over the 65536 bf16 values, built when the scale changes.
void fp8_quantize(const std::uint16_t* x, const float* scale, std::uint8_t* y, float* amax,
                  std::int64_t n);

// memcpy, in chunks over every core.
void copy(const void* src, void* dst, std::size_t bytes);

}  // namespace opbench::cpu_memops
