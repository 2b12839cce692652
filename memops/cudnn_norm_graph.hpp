#pragma once
// cuDNN operation graphs of LayerNorm and RMSNorm, forward in the training phase (saving the
// statistics backward needs) and backward, for a memops case of `rows` rows of `cols` elements:
// one CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR or ..._NORM_BACKWARD_DESCRIPTOR each, built
// on the shared cuDNN layer (cudnn/cudnn_backend.hpp), and which engines accept them on a GPU or
// on a device description (cudnn/cudnn_engines.hpp).
//
// Sources (read 2026):
//  - NVIDIA cuDNN documentation, Graph API, "Supported Graph Patterns" > generic runtime fusion
//    engines > "Normalizations"
//    (https://docs.nvidia.com/deeplearning/cudnn/developer/graph-api.html): X and Y (DY, DX) are
//    [N', D'] with the statistics taken over the last D' dimensions, e.g. [N, C, H, W]; Mean and
//    InvVariance are [N', 1, ...] in the compute type (FP32), outputs of CUDNN_NORM_FWD_TRAINING
//    and inputs of the backward; Scale, Bias, Dscale, Dbias are [1, ..., D'] in the weight type;
//    epsilon a [1, 1, 1, 1] constant; input types FP16, FP32, BF16; compute FP32; input and output
//    tensors at least 16-byte aligned; one layout for all tensors of an operation; no mixed input
//    or output types in the backward.
//  - cudnn_graph.h (cuDNN 9.19): the attribute names CUDNN_ATTR_OPERATION_NORM_FWD_{MODE, PHASE,
//    XDESC, MEAN_DESC, INV_VARIANCE_DESC, SCALE_DESC, BIAS_DESC, EPSILON_DESC, YDESC} and
//    CUDNN_ATTR_OPERATION_NORM_BWD_{MODE, XDESC, MEAN_DESC, INV_VARIANCE_DESC, DYDESC, SCALE_DESC,
//    DSCALE_DESC, DBIAS_DESC, DXDESC}; modes CUDNN_LAYER_NORM and CUDNN_RMS_NORM.
//  - cudnn-frontend (github.com/NVIDIA/cudnn-frontend): samples/cpp/norm/layernorm.cpp and
//    rmsnorm.cpp lay X out as [rows, cols, 1, 1] with strides {cols, 1, cols, cols}, scale and bias
//    as [1, cols, 1, 1], mean and inverse variance as [rows, 1, 1, 1] fp32, epsilon as a by-value
//    fp32 scalar; include/cudnn_frontend/node/dln.h sets the backward's epsilon only for cuDNN
//    older than 8.9.6, and node/rmsnorm.h leaves the RMSNorm backward's DBIAS unset without a
//    bias; benchmark/norms/benchmark_single_norm.py keeps scale, bias and their gradients in the
//    input type (bf16, fp16) — as docs/formulas.md and memops/memop.cpp count their bytes — with
//    fp32 statistics; test/python/test_layernorm.py and test_rmsnorm.py check the inverse
//    variance against rsqrt(var + eps) (LayerNorm) and rsqrt(mean(x²) + eps) (RMSNorm).
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cudnn/cudnn_backend.hpp"
#include "cudnn/cudnn_engine_report.hpp"
#include "cudnn/cudnn_engines.hpp"
#include "memops/memop.hpp"

namespace opbench {

// The unique ids of the tensors a variant pack names.
enum NormUid : std::int64_t {
  kNormUidX = 1,
  kNormUidScale = 2,
  kNormUidBias = 3,  // LayerNorm only
  kNormUidY = 4,
  kNormUidMean = 5,     // LayerNorm only: fp32 [rows, 1, 1, 1]
  kNormUidInvVar = 6,   // fp32 [rows, 1, 1, 1]: rstd = 1 / sqrt(var + eps)
  kNormUidEpsilon = 7,  // by value, fp32; forward only
  kNormUidDY = 8,
  kNormUidDX = 9,
  kNormUidDScale = 10,
  kNormUidDBias = 11,  // LayerNorm only
};

// The epsilon is passed by value at execution (kNormUidEpsilon): bench_memops's own per norm
// (memop_math: RMSNorm 1e-6, LayerNorm 1e-5), the one its reference uses.

// The graph and the builder that owns its tensors and its norm operation.
using NormGraph = CudnnGraph;

// Whether cuDNN's norm graphs express the operator (layernorm and rmsnorm).
bool is_cudnn_norm(MemOp op);
// Why this provider cannot run the case (another operator, a dtype the norm engines do not take),
// or nullopt.
std::optional<std::string> cudnn_norm_unsupported(const MemopCase& c);
// CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF or CUDNN_DATA_FLOAT.
cudnnDataType_t cudnn_norm_data_type(DType t);

// The finalized graph of the case's operator and pass; `handle` may be null (the graph then
// belongs to no device, for a device description). Throws run_failure with cuDNN's message.
NormGraph build_norm_graph(cudnnHandle_t handle, const MemopCase& c);

// What cuDNN makes of the case's graph on `target` without running it: the shared engine report
// (cudnn/cudnn_engine_report) of the case's norm graph, the heuristics' configurations (at most
// kSurveyConfigs) finalized in order until `enough_accepted` accept.
// status skipped, with cuDNN's reason in `note`, when the graph or every configuration is refused.
EngineReport cudnn_norm_engine_report(const MemopCase& c, const CudnnTarget& target,
                                      int enough_accepted);

}  // namespace opbench
