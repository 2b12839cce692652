#pragma once
// What an operator of a PyTorch trace is, from its name and its operands as the trace records
// them: the GEMM, attention or collective case it replays as, or the kind of time it stands for
// when nothing replays it. Pure functions over plain values; the readers (kineto_trace,
// execution_trace) fill the operands from their own formats. docs/architecture.md#profiler-traces
// lists which operators map to which case.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/coll_formulas.hpp"

namespace opbench::trace {

// One operand of an operator as a trace records it.
struct Operand {
  std::vector<std::int64_t> dims;  // a tensor's sizes; empty for a scalar or a list
  std::int64_t numel = 0;          // elements: a tensor's, or a list of tensors' in all
  std::string type;                // as the trace names it: "float", "c10::BFloat16",
                                   // "Tensor(c10::Half)", "GenericList[Tensor(float)]", "Int"
  // The last two dims stored column-major (a transposed view), from strides or from the view
  // that made it; nullopt when the trace cannot tell.
  std::optional<bool> transposed;
};

// opbench's dtype name of a trace's element type, for tensors ("float", "c10::BFloat16",
// "Tensor(c10::Half)", lists of them) and for PyTorch's communication metadata ("Float",
// "BFloat16"); nullopt for what is not a tensor type.
std::optional<std::string> dtype_of(std::string_view type);
// The element type inside a trace's type text ("Tensor(c10::Float4_e2m1fn_x2)" ->
// "Float4_e2m1fn_x2").
std::string_view element_type(std::string_view type);
std::size_t dtype_bytes(std::string_view dtype);  // of a name dtype_of gives; 0 when unknown

struct GemmCall {
  const char* op = "gemm";  // "gemm" or "gemm_batched"
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transa = false, transb = false;
  bool layout_known = true;  // false: the trace says nothing of the operands' strides (NN taken)
};
// The GEMM of a leaf matrix product (aten::mm, addmm, bmm, baddbmm, _scaled_mm) in bench_gemm's
// row-major convention: C[m,n] = A[m,k]·B[k,n], layout from A's and B's transposition. The
// composites (aten::matmul, linear, the autograd nodes) reach one of these and are not GEMMs
// themselves, so a product is counted once however deeply its callers nest.
//
// Both gemm_call and attention_call give nullopt for a call whose operands they read but whose
// dtype opbench does not benchmark (PyTorch's Float4_e2m1fn_x2, Float8_e8m0fnu, Short, ...), and
// put its element type, as the trace names it, in `unknown_type` where given: such a call is not
// replayed, and the readers say how many there were rather than drop them unsaid.
std::optional<GemmCall> gemm_call(std::string_view name, const std::vector<Operand>& in,
                                  std::string* unknown_type = nullptr);

struct AttentionCall {
  const char* pass = "fwd";  // "fwd" or "bwd"
  std::string dtype;
  std::int64_t batch = 0, heads_q = 0, heads_kv = 0, seq_q = 0, seq_kv = 0, head_dim_qk = 0,
               head_dim_v = 0;
  std::optional<bool> causal;  // nullopt: the trace does not record is_causal's value
};
// aten::_scaled_dot_product_{flash,efficient,cudnn}_attention and their _backward: query, key
// and value are [B, H, S, D]; flash-attn's flash_attn::_flash_attn_forward and _backward: [B, S,
// H, D]. `concrete` holds the arguments' values as the trace records them
// (Kineto's "Concrete Inputs"; an execution trace's scalar inputs), `schema` the operator's
// schema when the trace has it (is_causal is found by name there, else by its position in
// ATen's signature of each operator).
std::optional<AttentionCall> attention_call(std::string_view name, const std::vector<Operand>& in,
                                            const std::vector<std::string>& concrete,
                                            std::string_view schema = {},
                                            std::string* unknown_type = nullptr);

struct CommCall {
  CollOp op = CollOp::all_reduce;
  const char* op_name = "all_reduce";  // bench_ccl's name; "send", "recv", "barrier", ...
  bool p2p = false;
  std::string dtype;
  std::int64_t count = 0;  // as nccl-tests passes it (all_gather: send count, ...)
  bool replayable = true;  // an operation bench_ccl runs
};
// PyTorch's communication metadata (record_param_comms, NCCL kernels): "Collective name",
// "In msg nelems", "Out msg nelems", "Group size" and "dtype".
std::optional<CommCall> comm_call(std::string_view collective, std::int64_t in_nelems,
                                  std::int64_t out_nelems, int group_size, std::string_view dtype);
// An execution trace's c10d operators (c10d::allreduce_, _allgather_base_, ...), whose operands
// are the tensors: the communicator's size is not recorded and comes from `group_size`.
std::optional<CommCall> c10d_call(std::string_view name, const std::vector<Operand>& in,
                                  int group_size);
// The functional collectives of an execution trace (tensor parallelism, torch.compile'd jobs):
// _c10d_functional:: (all_reduce(input, reduce_op, group_name), all_gather_into_tensor(input,
// group_size, group_name), reduce_scatter_tensor(input, reduce_op, group_size, group_name), ...)
// and the legacy c10d_functional:: of torch 2.0 to 2.2, whose last argument is group_size.
// `scalars` holds each argument's value as text, `schema` the operator's schema where the trace
// has it. `group_size` is the operator's own where it has one, else `assumed` and
// `size_stated` false.
struct FunctionalComm {
  CommCall call;
  int group_size = 1;
  bool size_stated = false;
};
std::optional<FunctionalComm> functional_call(std::string_view name, const std::vector<Operand>& in,
                                              const std::vector<std::string>& scalars,
                                              std::string_view schema, int assumed);

// What an execution trace knows of one replayed call, for a profiler trace of the same step that
// recorded no shapes: the record-function id links them (an execution trace's rf_id, a Kineto
// event's "Record function id").
struct ShapeHint {
  std::optional<GemmCall> gemm;
  std::optional<AttentionCall> attention;
  std::optional<CommCall> comm;
  int comm_size = 0;
  bool comm_size_stated = false;  // the trace's own (pg_size, group_size), not an assumption
  int comm_stride = 0;        // the group's global rank stride where the trace states it, else 0
  std::string unknown_dtype;  // a product or attention call in a dtype opbench does not know
};

// A process group's size or global rank stride as a trace states it, where the value is one (1 to
// 2^24 ranks); 0 for anything else (PyTorch writes -1 for ranks not evenly spaced, 0 for a group
// of one).
int stated_ranks(std::int64_t value);

// The kind of time an operator no benchmark replays stands for: "memory_bound" (elementwise
// arithmetic, norms, softmax, losses, embeddings, copies, the optimizer's foreach and fused
// updates) or "other".
const char* unreplayed_kind(std::string_view name);
// A step marker of torch.profiler's schedule (ProfilerStep#N).
bool is_step_marker(std::string_view name);

}  // namespace opbench::trace
