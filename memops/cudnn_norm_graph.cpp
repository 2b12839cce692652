#include "memops/cudnn_norm_graph.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

using Dims = std::vector<std::int64_t>;

// The tensors of a case as cudnn-frontend's norm samples lay them out: the normalised dimension
// is C of an [N, C, 1, 1] tensor over row-major (rows, cols) memory; weights [1, C, 1, 1] in the
// input type; statistics [N, 1, 1, 1] fp32. (With cuDNN 9.19, weights in the input type also keep
// the specialised RMSNorm engines 4 and 5 the heuristics offer for some bf16 shapes on H100 and
// B200 descriptions; with fp32 weights they offer only the generic engine 1.)
struct NormLayout {
  std::int64_t rows, cols;
  cudnnDataType_t io;
  explicit NormLayout(const MemopCase& c)
      : rows(c.rows), cols(c.cols), io(cudnn_norm_data_type(c.dtype)) {}
  GraphTensor activations(GraphBuilder& g, std::int64_t uid) const {
    return g.tensor(uid, {rows, cols, 1, 1}, {cols, 1, cols, cols}, io);
  }
  GraphTensor weight(GraphBuilder& g, std::int64_t uid) const {
    return g.tensor(uid, {1, cols, 1, 1}, {cols, 1, cols, cols}, io);
  }
  GraphTensor stats(GraphBuilder& g, std::int64_t uid) const {
    return g.tensor(uid, {rows, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT);
  }
};

cudnnBackendNormMode_t norm_mode(MemOp op) {
  return op == MemOp::layernorm ? CUDNN_LAYER_NORM : CUDNN_RMS_NORM;
}

// y = norm(x) · scale (+ bias), saving the statistics (training phase).
Descriptor norm_forward(GraphBuilder& g, const MemopCase& c) {
  const NormLayout d(c);
  const bool layer = c.op == MemOp::layernorm;
  auto x = d.activations(g, kNormUidX);
  auto scale = d.weight(g, kNormUidScale);
  auto y = d.activations(g, kNormUidY);
  auto inv_var = d.stats(g, kNormUidInvVar);
  auto epsilon = g.scalar(kNormUidEpsilon, CUDNN_DATA_FLOAT);

  auto op = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = norm_mode(c.op);
  op->set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode, "norm forward mode");
  const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_TRAINING;
  op->set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase,
          "norm forward phase");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, *x.desc, "norm forward X");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, *scale.desc, "norm forward scale");
  if (layer) {
    auto bias = d.weight(g, kNormUidBias);
    op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, *bias.desc, "norm forward bias");
    auto mean = d.stats(g, kNormUidMean);
    op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, *mean.desc, "norm forward mean");
  }
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, *inv_var.desc,
               "norm forward inverse variance");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, *epsilon.desc, "norm forward epsilon");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, *y.desc, "norm forward Y");
  op->finalize("norm forward operation finalize");
  return op;
}

// dx, dscale (, dbias) from dy, x, scale and the saved statistics. No epsilon: cuDNN takes it
// only before 8.9.6 (cudnn-frontend's node/dln.h), the saved inverse variance has it already.
Descriptor norm_backward(GraphBuilder& g, const MemopCase& c) {
  const NormLayout d(c);
  const bool layer = c.op == MemOp::layernorm;
  auto dy = d.activations(g, kNormUidDY);
  auto x = d.activations(g, kNormUidX);
  auto scale = d.weight(g, kNormUidScale);
  auto inv_var = d.stats(g, kNormUidInvVar);
  auto dx = d.activations(g, kNormUidDX);
  auto dscale = d.weight(g, kNormUidDScale);

  auto op = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = norm_mode(c.op);
  op->set(CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode, "norm backward mode");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, *x.desc, "norm backward X");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, *dy.desc, "norm backward DY");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, *scale.desc, "norm backward scale");
  if (layer) {
    auto mean = d.stats(g, kNormUidMean);
    op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, *mean.desc, "norm backward mean");
  }
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, *inv_var.desc,
               "norm backward inverse variance");
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, *dscale.desc, "norm backward dscale");
  if (layer) {
    auto dbias = d.weight(g, kNormUidDBias);
    op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, *dbias.desc, "norm backward dbias");
  }
  op->set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, *dx.desc, "norm backward DX");
  op->finalize("norm backward operation finalize");
  return op;
}

std::string graph_name(const MemopCase& c) {
  return fmt::format("{} {}", memop_name(c.op), mem_pass_name(c.pass));
}

}  // namespace

bool is_cudnn_norm(MemOp op) {
  return op == MemOp::layernorm || op == MemOp::rmsnorm;
}

cudnnDataType_t cudnn_norm_data_type(DType t) {
  switch (t) {
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DType::fp16:
      return CUDNN_DATA_HALF;
    case DType::fp32:
      return CUDNN_DATA_FLOAT;
    default:
      throw std::logic_error("cudnn_norm_data_type: cuDNN's norms take bf16, fp16 and fp32");
  }
}

std::optional<std::string> cudnn_norm_unsupported(const MemopCase& c) {
  if (!is_cudnn_norm(c.op))
    return fmt::format("the cudnn provider runs layernorm and rmsnorm; {} runs on --provider cuda",
                       memop_name(c.op));
  if (c.dtype != DType::bf16 && c.dtype != DType::fp16 && c.dtype != DType::fp32)
    return fmt::format("cuDNN's norm engines take bf16, fp16 and fp32 inputs, not {}",
                       dtype_name(c.dtype));
  return std::nullopt;
}

NormGraph build_norm_graph(cudnnHandle_t handle, const MemopCase& c) {
  if (auto why = cudnn_norm_unsupported(c)) throw run_failure(*why);
  NormGraph out;
  out.builder = std::make_unique<GraphBuilder>(handle);
  // The norm operation is made here (the builder knows no norm attributes) and joins the graph
  // through the builder, which finalizes it as it does the SDPA graphs (a handle only when there
  // is a device).
  out.builder->add_operation(c.pass == MemPass::bwd ? norm_backward(*out.builder, c)
                                                    : norm_forward(*out.builder, c));
  out.graph = out.builder->finish();
  return out;
}

EngineReport cudnn_norm_engine_report(const MemopCase& c, const CudnnTarget& target,
                                      int enough_accepted) {
  if (auto why = cudnn_norm_unsupported(c)) return refused_engine_report(*why);
  return cudnn_engine_report(
      graph_name(c), [&](cudnnHandle_t handle) { return build_norm_graph(handle, c); }, target,
      enough_accepted);
}

}  // namespace opbench
