#include "trace/op_shapes.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>
#include <utility>

namespace opbench::trace {
namespace {

std::string_view strip(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix ? name.substr(prefix.size()) : name;
}

bool is_matrix_stack(const Operand& o, std::size_t rank) {
  return o.dims.size() == rank &&
         std::all_of(o.dims.begin(), o.dims.end(), [](std::int64_t d) { return d > 0; });
}

// The argument index of `name` in an ATen schema "aten::op(Tensor query, ..., *, float? scale)".
std::optional<std::size_t> schema_index(std::string_view schema, std::string_view name) {
  const auto open = schema.find('('), close = schema.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  std::string_view args = schema.substr(open + 1, close - open - 1);
  std::size_t index = 0, depth = 0, start = 0;
  for (std::size_t i = 0; i <= args.size(); ++i) {
    const char c = i < args.size() ? args[i] : ',';
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth > 0) --depth;
    if (c != ',' || depth > 0) continue;
    std::string_view arg = args.substr(start, i - start);
    start = i + 1;
    while (!arg.empty() && arg.front() == ' ')
      arg.remove_prefix(1);
    if (arg == "*") continue;  // keyword-only from here; the trace still lists them in order
    std::string_view decl = arg.substr(0, arg.find('='));
    while (!decl.empty() && decl.back() == ' ')
      decl.remove_suffix(1);
    const auto space = decl.rfind(' ');
    if (space != std::string_view::npos && decl.substr(space + 1) == name) return index;
    ++index;
  }
  return std::nullopt;
}

struct SdpaOp {
  std::string_view name;
  const char* pass;
  std::size_t query;      // the query's index; key and value follow it
  std::size_t is_causal;  // in ATen's signature (PyTorch 2.1 and later)
  bool bshd = false;      // query, key and value [B, S, H, D] (flash-attn's), not [B, H, S, D]
  std::string_view causal_name = "is_causal";  // the argument's name in the schema
};
// ATen's signatures: forward (query, key, value, ...), backward (grad_out, query, key, value,
// ...), is_causal where each puts it. flash-attn's own operators (custom ops since flash-attn
// 2.6, flash_attn_interface.py): _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal,
// ...) and _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p,
// softmax_scale, causal, ...), their tensors [B, S, H, D].
constexpr std::array<SdpaOp, 10> kSdpaOps = {{
    {"_scaled_dot_product_flash_attention", "fwd", 0, 4},
    {"_scaled_dot_product_flash_attention_for_cpu", "fwd", 0, 4},
    {"_scaled_dot_product_efficient_attention", "fwd", 0, 6},
    {"_scaled_dot_product_cudnn_attention", "fwd", 0, 6},
    {"_scaled_dot_product_flash_attention_backward", "bwd", 1, 11},
    {"_scaled_dot_product_flash_attention_for_cpu_backward", "bwd", 1, 7},
    {"_scaled_dot_product_efficient_attention_backward", "bwd", 1, 11},
    {"_scaled_dot_product_cudnn_attention_backward", "bwd", 1, 14},
    {"flash_attn::_flash_attn_forward", "fwd", 0, 5, true, "causal"},
    {"flash_attn::_flash_attn_backward", "bwd", 1, 11, true, "causal"},
}};

std::optional<bool> truth(const std::string& text) {
  if (text == "True" || text == "true" || text == "1") return true;
  if (text == "False" || text == "false" || text == "0") return false;
  return std::nullopt;
}

}  // namespace

std::string_view element_type(std::string_view type) {
  // lists and the execution trace's Tensor(...) wrap the element type
  for (std::string_view wrapper : {"GenericList[", "Tensor(", "Tensor?("}) {
    const auto at = type.find(wrapper);
    if (at != std::string_view::npos) {
      type.remove_prefix(at + wrapper.size());
      const auto end = type.find_first_of(")]");
      type = type.substr(0, end);
    }
  }
  return strip(type, "c10::");
}

std::optional<std::string> dtype_of(std::string_view type) {
  type = element_type(type);
  // ROCm's fp8 (MI300: the "fnuz" encodings, no negative zero, another exponent bias) reads as
  // the OCP format of the same width: what another GPU runs for the same GEMM
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 20> kNames = {{
      {"float", "fp32"},
      {"Float", "fp32"},
      {"double", "fp64"},
      {"Double", "fp64"},
      {"BFloat16", "bf16"},
      {"Half", "fp16"},
      {"half", "fp16"},
      {"Float8_e4m3fn", "fp8_e4m3"},
      {"Float8_e5m2", "fp8_e5m2"},
      {"Float8_e4m3fnuz", "fp8_e4m3"},
      {"Float8_e5m2fnuz", "fp8_e5m2"},
      {"signed char", "int8"},
      {"Char", "int8"},
      {"unsigned char", "uint8"},
      {"Byte", "uint8"},
      {"int", "int32"},
      {"Int", "int32"},
      {"long int", "int64"},
      {"Long", "int64"},
      {"int64_t", "int64"},
  }};
  for (const auto& [trace_name, ours] : kNames)
    if (type == trace_name) return std::string(ours);
  return std::nullopt;
}

std::size_t dtype_bytes(std::string_view dtype) {
  if (dtype == "fp64" || dtype == "int64") return 8;
  if (dtype == "fp32" || dtype == "int32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8_e4m3" || dtype == "fp8_e5m2" || dtype == "int8" || dtype == "uint8") return 1;
  return 0;
}

namespace {

// gemm_call's and attention_call's reading of the operands, whatever their element type: `dtype`
// left as the trace names it (Operand::type).
std::optional<GemmCall> gemm_shape(std::string_view name, const std::vector<Operand>& in) {
  name = strip(name, "aten::");
  std::size_t a = 0, rank = 2;
  if (name == "mm" || name == "_scaled_mm") {
  } else if (name == "addmm" || name == "_addmm_activation") {
    a = 1;
  } else if (name == "bmm") {
    rank = 3;
  } else if (name == "baddbmm") {
    a = 1, rank = 3;
  } else {
    return std::nullopt;
  }
  if (in.size() < a + 2) return std::nullopt;
  const Operand &A = in[a], &B = in[a + 1];
  if (!is_matrix_stack(A, rank) || !is_matrix_stack(B, rank)) return std::nullopt;
  const std::int64_t batch = rank == 3 ? A.dims[0] : 1;
  const std::int64_t m = A.dims[rank - 2], k = A.dims[rank - 1], n = B.dims[rank - 1];
  if (B.dims[rank - 2] != k || (rank == 3 && B.dims[0] != batch)) return std::nullopt;
  GemmCall g;
  g.op = rank == 3 ? "gemm_batched" : "gemm";
  g.dtype = A.type;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.transa = A.transposed.value_or(false);
  g.transb = B.transposed.value_or(false);
  g.layout_known = A.transposed.has_value() && B.transposed.has_value();
  return g;
}

std::optional<AttentionCall> attention_shape(std::string_view name, const std::vector<Operand>& in,
                                             const std::vector<std::string>& concrete,
                                             std::string_view schema) {
  name = strip(name, "aten::");
  const auto op = std::find_if(kSdpaOps.begin(), kSdpaOps.end(),
                               [&](const SdpaOp& o) { return o.name == name; });
  if (op == kSdpaOps.end() || in.size() < op->query + 3) return std::nullopt;
  const Operand &q = in[op->query], &k = in[op->query + 1], &v = in[op->query + 2];
  if (!is_matrix_stack(q, 4) || !is_matrix_stack(k, 4) || !is_matrix_stack(v, 4))
    return std::nullopt;
  AttentionCall a;
  a.pass = op->pass;
  a.dtype = q.type;
  const std::size_t h = op->bshd ? 2 : 1, s = op->bshd ? 1 : 2;  // the heads' and sequence's dims
  a.batch = q.dims[0], a.heads_q = q.dims[h], a.seq_q = q.dims[s], a.head_dim_qk = q.dims[3];
  a.heads_kv = k.dims[h], a.seq_kv = k.dims[s], a.head_dim_v = v.dims[3];
  const std::size_t at = schema_index(schema, op->causal_name).value_or(op->is_causal);
  if (at < concrete.size()) a.causal = truth(concrete[at]);
  return a;
}

// A call read with its dtype in opbench's names; nullopt when opbench has no such dtype, whose
// element type then goes to `unknown_type` (where given).
template <class Call>
std::optional<Call> with_our_dtype(std::optional<Call> call, std::string* unknown_type) {
  if (!call) return std::nullopt;
  auto ours = dtype_of(call->dtype);
  if (!ours) {
    if (unknown_type != nullptr) *unknown_type = element_type(call->dtype);
    return std::nullopt;
  }
  call->dtype = std::move(*ours);
  return call;
}

}  // namespace

std::optional<GemmCall> gemm_call(std::string_view name, const std::vector<Operand>& in,
                                  std::string* unknown_type) {
  return with_our_dtype(gemm_shape(name, in), unknown_type);
}

std::optional<AttentionCall> attention_call(std::string_view name, const std::vector<Operand>& in,
                                            const std::vector<std::string>& concrete,
                                            std::string_view schema, std::string* unknown_type) {
  return with_our_dtype(attention_shape(name, in, concrete, schema), unknown_type);
}

std::optional<CommCall> comm_call(std::string_view collective, std::int64_t in_nelems,
                                  std::int64_t out_nelems, int group_size, std::string_view dtype) {
  // ProcessGroupNCCL's WorkNCCL::wait records its own record_param_comms ("wait", group size 1,
  // Byte): a wait for a collective already counted, not one of its own
  if (collective == "wait") return std::nullopt;
  CommCall c;
  const auto ours = dtype_of(dtype);
  c.dtype = ours.value_or("other");
  const std::int64_t n = std::max(group_size, 1);
  std::string_view name = collective;
  auto is = [&](std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (is({"allreduce", "all_reduce", "allreduce_coalesced", "all_reduce_coalesced"})) {
    c.op = CollOp::all_reduce, c.op_name = "all_reduce", c.count = in_nelems;
  } else if (is({"allgather", "all_gather", "_allgather_base", "all_gather_into_tensor",
                 "allgather_into_tensor_coalesced", "all_gather_into_tensor_coalesced",
                 "allgather_coalesced"})) {
    c.op = CollOp::all_gather, c.op_name = "all_gather";
    c.count = in_nelems > 0 ? in_nelems : out_nelems / n;
  } else if (is({"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor",
                 "reduce_scatter_tensor_coalesced", "reduce_scatter_coalesced"})) {
    c.op = CollOp::reduce_scatter, c.op_name = "reduce_scatter";
    c.count = out_nelems > 0 ? out_nelems : in_nelems / n;
  } else if (is({"all_to_all", "alltoall", "alltoall_base", "all_to_allv", "alltoallv"})) {
    c.op = CollOp::all_to_all, c.op_name = "all_to_all", c.count = in_nelems / n;
  } else if (is({"broadcast"})) {
    c.op = CollOp::broadcast, c.op_name = "broadcast", c.count = in_nelems;
  } else if (is({"reduce"})) {
    c.op = CollOp::reduce, c.op_name = "reduce", c.count = in_nelems;
  } else if (is({"send", "recv", "recvAnysource"})) {
    c.op = CollOp::send_recv, c.op_name = name == "send" ? "send" : "recv", c.p2p = true;
    c.count = in_nelems > 0 ? in_nelems : out_nelems;
  } else if (is({"barrier"})) {
    c.op_name = "barrier", c.dtype = "none", c.count = 0, c.replayable = false;
  } else {
    c.op_name = "other", c.count = std::max(in_nelems, out_nelems), c.replayable = false;
  }
  if (!ours && c.op_name != std::string_view("barrier")) c.replayable = false;
  return c;
}

std::optional<CommCall> c10d_call(std::string_view name, const std::vector<Operand>& in,
                                  int group_size) {
  name = strip(name, "c10d::");
  if (!name.empty() && name.back() == '_') name.remove_suffix(1);  // allreduce_, broadcast_
  if (in.empty()) return std::nullopt;
  // (operand holding the elements, its role): the schemas put outputs first for the
  // gathers and scatters of flat tensors
  std::int64_t in_n = 0, out_n = 0;
  std::string_view type;
  if (name == "allreduce" || name == "allreduce_coalesced" || name == "broadcast" ||
      name == "reduce" || name == "send" || name == "recv") {
    in_n = in[0].numel, type = in[0].type;
  } else if ((name == "allgather" || name == "allgather_into_tensor_coalesced") &&
             in.size() >= 2) {  // (output lists, inputs)
    in_n = in[1].numel, type = in[1].type;
  } else if ((name == "_allgather_base" || name == "alltoall_base") && in.size() >= 2) {
    in_n = in[1].numel, out_n = in[0].numel, type = in[1].type;  // (output, input)
  } else if (name == "reduce_scatter" || name == "_reduce_scatter_base" ||
             name == "reduce_scatter_tensor_coalesced") {
    out_n = in[0].numel, type = in[0].type;  // (output(s), input(s))
  } else if (name == "barrier") {
    return comm_call("barrier", 0, 0, group_size, "");
  } else {
    return std::nullopt;
  }
  const auto dtype = dtype_of(type);
  return comm_call(name, in_n, out_n, group_size, dtype ? std::string_view(type) : "");
}

int stated_ranks(std::int64_t value) {
  return value > 0 && value <= (1 << 24) ? static_cast<int>(value) : 0;
}

std::optional<FunctionalComm> functional_call(std::string_view name, const std::vector<Operand>& in,
                                              const std::vector<std::string>& scalars,
                                              std::string_view schema, int assumed) {
  const bool legacy = name.substr(0, 17) == "c10d_functional::";
  if (!legacy && name.substr(0, 18) != "_c10d_functional::") return std::nullopt;
  name.remove_prefix(name.find("::") + 2);
  // all_reduce_ and broadcast_ work in place, the _out forms into a given tensor, the _coalesced
  // ones on a list (its operand's elements are the list's, summed): one collective each
  if (!name.empty() && name.back() == '_') name.remove_suffix(1);
  for (std::string_view form : {std::string_view("_out"), std::string_view("_coalesced")})
    if (name.size() > form.size() && name.substr(name.size() - form.size()) == form)
      name.remove_suffix(form.size());
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Kind {
    std::string_view name;
    const char* collective;  // comm_call's name
    std::size_t group_size;  // its index in _c10d_functional's schema; kNone: no such argument
  };
  // torch/csrc/distributed/c10d/Functional.cpp's TORCH_LIBRARY(_c10d_functional)
  static constexpr std::array<Kind, 5> kKinds = {{{"all_reduce", "all_reduce", kNone},
                                                  {"all_gather_into_tensor", "all_gather", 1},
                                                  {"reduce_scatter_tensor", "reduce_scatter", 2},
                                                  {"all_to_all_single", "all_to_all", kNone},
                                                  {"broadcast", "broadcast", kNone}}};
  const auto kind =
      std::find_if(kKinds.begin(), kKinds.end(), [&](const Kind& k) { return k.name == name; });
  if (kind == kKinds.end() || in.empty()) return std::nullopt;
  const std::size_t at =
      schema_index(schema, "group_size").value_or(legacy ? in.size() - 1 : kind->group_size);
  FunctionalComm f;
  f.group_size = assumed;
  if (at < scalars.size() && !scalars[at].empty()) {
    std::int64_t stated = 0;
    const char* first = scalars[at].data();
    const auto [end, error] = std::from_chars(first, first + scalars[at].size(), stated);
    if (error == std::errc() && end == first + scalars[at].size() && stated_ranks(stated) > 0) {
      f.group_size = stated_ranks(stated);
      f.size_stated = true;
    }
  }
  const Operand& tensor = in[0];
  const auto dtype = dtype_of(tensor.type);
  // the input's elements: each rank's share for a gather, the whole for a scatter
  const auto c = comm_call(kind->collective, tensor.numel, 0, f.group_size,
                           dtype ? std::string_view(tensor.type) : "");
  if (!c) return std::nullopt;
  f.call = *c;
  return f;
}

const char* unreplayed_kind(std::string_view name) {
  name = strip(name, "aten::");
  // products that are not replayed (no shapes, or a form bench_gemm does not run): not
  // memory-bound, though some begin as the elementwise add does
  static constexpr std::array<std::string_view, 22> kProducts = {"mm",
                                                                 "bmm",
                                                                 "addmm",
                                                                 "addmm_",
                                                                 "_addmm_activation",
                                                                 "baddbmm",
                                                                 "baddbmm_",
                                                                 "addbmm",
                                                                 "addbmm_",
                                                                 "addmv",
                                                                 "addmv_",
                                                                 "addr",
                                                                 "addr_",
                                                                 "matmul",
                                                                 "linear",
                                                                 "_scaled_mm",
                                                                 "_grouped_mm",
                                                                 "_scaled_grouped_mm",
                                                                 "_int_mm",
                                                                 "mv",
                                                                 "dot",
                                                                 "einsum"};
  for (std::string_view p : kProducts)
    if (name == p) return "other";
  static constexpr std::array<std::string_view, 21> kPrefixes = {
      "_foreach_", "_fused_adam", "add",  "sub",     "mul",      "div",          "neg",
      "exp",       "log",         "pow",  "rsqrt",   "sqrt",     "sigmoid",      "silu",
      "gelu",      "relu",        "tanh", "softmax", "_softmax", "_log_softmax", "log_softmax"};
  static constexpr std::array<std::string_view, 36> kNames = {"layer_norm",
                                                              "native_layer_norm",
                                                              "native_layer_norm_backward",
                                                              "rms_norm",
                                                              "_fused_rms_norm",
                                                              "_fused_rms_norm_backward",
                                                              "embedding",
                                                              "embedding_dense_backward",
                                                              "embedding_backward",
                                                              "cross_entropy_loss",
                                                              "nll_loss",
                                                              "nll_loss_forward",
                                                              "nll_loss_backward",
                                                              "nll_loss_nd",
                                                              "copy_",
                                                              "_to_copy",
                                                              "to",
                                                              "clone",
                                                              "contiguous",
                                                              "cat",
                                                              "stack",
                                                              "index",
                                                              "index_select",
                                                              "gather",
                                                              "scatter",
                                                              "fill_",
                                                              "zero_",
                                                              "zeros",
                                                              "zeros_like",
                                                              "ones_like",
                                                              "sum",
                                                              "mean",
                                                              "masked_fill",
                                                              "where",
                                                              "addcmul_",
                                                              "lerp_"};
  for (std::string_view p : kPrefixes)
    if (name.substr(0, p.size()) == p) return "memory_bound";
  for (std::string_view n : kNames)
    if (name == n) return "memory_bound";
  if (name.substr(0, 6) == "Memcpy" || name.substr(0, 6) == "Memset" ||
      name.substr(0, 9) == "threshold")
    return "memory_bound";
  // torch.compile's Triton kernels, each launched inside a record_function of its name
  // (triton_<first 3 letters of its category>_fused_...): pointwise, reductions, persistent
  // reductions, foreach (a compiled optimizer), scans and the category "unknown" (cooperative
  // reductions, fixed-configuration kernels) stream memory; templates (triton_tem_: GEMMs, flex
  // attention) do not
  for (std::string_view p :
       {"triton_poi_", "triton_red_", "triton_per_", "triton_for_", "triton_spl_", "triton_unk_"})
    if (name.substr(0, p.size()) == p) return "memory_bound";
  return "other";
}

bool is_step_marker(std::string_view name) {
  return name.substr(0, 13) == "ProfilerStep#";
}

}  // namespace opbench::trace
