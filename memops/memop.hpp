#pragma once
// The memory-bound operators of a training step: their names, passes and dtypes, and the case a
// run measures. What each reads and writes, and so its bytes (docs/formulas.md, "Memory-bound
// operators": a figure of GB/s is these bytes over the time), is memops/memop_operands' one
// layer up, which stands on this one.
//
// Shapes: a row operator works on `rows` rows of `cols` elements (norms over hidden, softmax over
// a row of length L, cross-entropy over the vocabulary); an elementwise operator on
// n = rows x cols elements. s is the element size of `dtype`; statistics, optimizer state and
// rotary tables are fp32 (4 bytes); token ids are int64 (8 bytes).
#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.hpp"

namespace opbench {

enum class MemOp {
  add,            // residual add: z = x + y
  rmsnorm,        // y = x / rms(x) * w, rstd kept for backward
  layernorm,      // y = (x - mean) * rstd * w + b
  add_rmsnorm,    // h = x + residual, y = rmsnorm(h) * w; h written too (the residual stream)
  softmax,        // rows of length L
  swiglu,         // y = silu(g) * u
  gelu,           // tanh approximation
  rope,           // rotary embedding of q and k (rows = tokens)
  cross_entropy,  // loss and gradient of the logits in one pass, as training fuses them
  embedding,      // lookup of rows tokens from a vocab x hidden table; backward scatter-adds
  adamw,          // fp32 parameters, fp32 gradient, two fp32 moments
  adamw_bf16,     // fp32 master weights and moments, bf16 gradient, bf16 parameter copy written
  cast_to_bf16,   // fp32 -> bf16
  cast_to_fp32,   // bf16 -> fp32
  fp8_quantize,   // bf16 -> e4m3 with a scale, and the amax of the input
  // The pointwise kernels a framework runs one by one in eager mode (bench_step --kernels eager;
  // memop_math's "eager kernels" say each one's arithmetic):
  mul,              // z = x y
  scale,            // y = a x (a scalar, or a broadcast operand small enough to stay in cache)
  sqrt,             // y = sqrt(|x|)
  silu,             // y = x sigmoid(x); backward dx = dy silu'(x)
  fill,             // y = 0 (zero_, the gradient buffers' fill)
  scale_inplace,    // x = a x (mul_)
  axpy_inplace,     // y = y + a x (add_ with alpha, addcmul_)
  addcdiv_inplace,  // p = p - a m / (|d| + 1) (addcdiv_: AdamW's update)
  copy,             // device to device (the CPU: memory to memory)
  h2d,              // host to device, pinned host memory
  d2h,              // device to host, pinned
  h2d_pageable,     // host to device from pageable memory
  d2h_pageable,     // device to host into pageable memory
  peer,             // GPU to GPU: every pair in turn, or every GPU at once (peer_all)
  peer_all,
};

enum class MemPass { fwd, bwd };

std::string memop_name(MemOp op);
std::string mem_pass_name(MemPass pass);
// Every operator, in the order runs list them.
const std::vector<MemOp>& all_memops();
// Their names, comma-separated, for help texts.
std::string memop_names();
// The operator named `name`; bad_input naming `what` (the flag; empty: no prefix, for a file
// entry that names itself) otherwise, with the closest name.
MemOp parse_memop(const std::string& name, const std::string& what);
// Whether the operator has a backward pass that training runs (norms, softmax, activations,
// rope, embedding); the others have fwd only (cross_entropy's fwd is loss and gradient).
bool has_backward(MemOp op);
// Copies between memories: their bytes are what crosses the link, and no --check compares them
// with a reference computation (the copy is compared byte for byte).
bool is_copy(MemOp op);
// The dtypes an operator takes: casts, fp8 quantize and AdamW fix theirs; the others take fp32,
// bf16 and fp16.
bool memop_accepts(MemOp op, DType t);
// The dtype an operator runs in when `wanted` is asked for: its own fixed one (adamw: fp32,
// fp8_quantize: bf16 input, the casts) or `wanted`.
DType memop_dtype(MemOp op, DType wanted);

struct MemopCase {
  std::string report;  // which report the row goes to: the model, the shapes file, or "sweep"
  std::string source;  // the model's name, "shapes" or "sweep"
  MemOp op = MemOp::add;
  MemPass pass = MemPass::fwd;
  std::int64_t rows = 0, cols = 0;
  // rope: query and key-value heads of head_dim each (rows x heads x head_dim query elements).
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;
  std::int64_t vocab = 0;  // embedding: the table's rows (cols = hidden)
  // peer: the source and destination GPU; peer_all: every GPU sends to the next (devices of them).
  int src_device = 0, dst_device = 1, devices = 2;
  DType dtype = DType::fp32;
  std::int64_t calls_per_step = 1;
  std::int64_t tp = 0, micro_batch = 0, seqlen = 0;  // 0: not from a model
  std::string note;

  std::int64_t elements() const { return rows * cols; }
  // Copies: the bytes that cross from one memory to the other (per GPU pair, times the GPUs for
  // peer_all); 0 for the other operators. The bytes every operator reads and writes are
  // memop_operands.hpp's memop_read_bytes and memop_write_bytes.
  std::int64_t copied_bytes() const;
  // "4096x8192", "t4096 h32/8 d128" (rope), "4096x4096 of 128256" (embedding)
  std::string dims() const;
};

}  // namespace opbench
