#include "cudnn/cudnn_backend.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace opbench {

LibraryVersion cudnn_library_version() {
  return {"cuDNN", version_from_int(CUDNN_VERSION),
          version_from_int(static_cast<long long>(cudnnGetVersion()))};
}

void cudnn_check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  throw run_failure(fmt::format("cuDNN {}: {}{}{}", what, cudnnGetErrorString(status),
                                detail[0] ? ": " : "", detail));
}

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) {
  cudnn_check(cudnnBackendCreateDescriptor(type, &desc_), "cudnnBackendCreateDescriptor");
}

BackendDescriptor::~BackendDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);
}

void BackendDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                            std::int64_t count, const void* values, const char* what) {
  cudnn_check(cudnnBackendSetAttribute(desc_, name, type, count, values), what);
}

void BackendDescriptor::set_int64(cudnnBackendAttributeName_t name, std::int64_t value,
                                  const char* what) {
  set(name, CUDNN_TYPE_INT64, 1, &value, what);
}

void BackendDescriptor::set_int64s(cudnnBackendAttributeName_t name,
                                   const std::vector<std::int64_t>& values, const char* what) {
  set(name, CUDNN_TYPE_INT64, static_cast<std::int64_t>(values.size()), values.data(), what);
}

void BackendDescriptor::set_bool(cudnnBackendAttributeName_t name, bool value, const char* what) {
  set(name, CUDNN_TYPE_BOOLEAN, 1, &value, what);
}

void BackendDescriptor::set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value,
                                      const char* what) {
  set(name, CUDNN_TYPE_DATA_TYPE, 1, &value, what);
}

void BackendDescriptor::set_desc(cudnnBackendAttributeName_t name, const BackendDescriptor& value,
                                 const char* what) {
  cudnnBackendDescriptor_t raw = value.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
}

void BackendDescriptor::finalize(const char* what) {
  cudnn_check(cudnnBackendFinalize(desc_), what);
}

std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

namespace {

Descriptor make_tensor(std::int64_t uid, const std::vector<std::int64_t>& dims,
                       const std::vector<std::int64_t>& strides, cudnnDataType_t type,
                       bool is_virtual, bool by_value) {
  auto t = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t->set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type, "tensor data type");
  t->set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims, "tensor dimensions");
  t->set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides, "tensor strides");
  t->set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid, "tensor uid");
  t->set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16, "tensor alignment");
  if (is_virtual) t->set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, true, "tensor is_virtual");
  if (by_value) t->set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true, "tensor is_by_value");
  t->finalize("tensor finalize");
  return t;
}

}  // namespace

GraphTensor GraphBuilder::tensor(std::int64_t uid, std::vector<std::int64_t> dims,
                                 std::vector<std::int64_t> strides, cudnnDataType_t type) {
  GraphTensor t{make_tensor(uid, dims, strides, type, false, false), uid, dims, strides, type};
  tensors_.push_back(t.desc);
  pack_uids_.push_back(uid);
  return t;
}

GraphTensor GraphBuilder::virtual_tensor(std::vector<std::int64_t> dims,
                                         std::vector<std::int64_t> strides, cudnnDataType_t type) {
  const std::int64_t uid = next_virtual_uid_++;
  GraphTensor t{make_tensor(uid, dims, strides, type, true, false), uid, dims, strides, type};
  tensors_.push_back(t.desc);
  return t;
}

GraphTensor GraphBuilder::scalar(std::int64_t uid, cudnnDataType_t type) {
  const std::vector<std::int64_t> ones{1, 1, 1, 1};
  GraphTensor t{make_tensor(uid, ones, ones, type, false, true), uid, ones, ones, type};
  tensors_.push_back(t.desc);
  pack_uids_.push_back(uid);
  return t;
}

void GraphBuilder::matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c) {
  BackendDescriptor desc(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  desc.set_data_type(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT, "matmul compute type");
  desc.finalize("matmul descriptor finalize");
  auto op = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, *a.desc, "matmul A");
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, *b.desc, "matmul B");
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, *c.desc, "matmul C");
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc, "matmul descriptor");
  op->finalize("matmul operation finalize");
  ops_.push_back(op);
}

void GraphBuilder::pointwise(cudnnPointwiseMode_t mode, const GraphTensor& x, const GraphTensor* b,
                             const GraphTensor* t, const GraphTensor& y, cudnnDataType_t compute,
                             std::int64_t axis) {
  BackendDescriptor desc(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  desc.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
  desc.set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, compute, "pointwise precision");
  if (axis >= 0) desc.set_int64(CUDNN_ATTR_POINTWISE_AXIS, axis, "pointwise axis");
  desc.finalize("pointwise descriptor finalize");
  auto op = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc, "pointwise descriptor");
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *x.desc, "pointwise X");
  if (b) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b->desc, "pointwise B");
  if (t) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t->desc, "pointwise T");
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *y.desc, "pointwise Y");
  op->finalize("pointwise operation finalize");
  ops_.push_back(op);
}

void GraphBuilder::reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x,
                             const GraphTensor& y) {
  BackendDescriptor desc(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  desc.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce,
           "reduction operator");
  desc.set_data_type(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT, "reduction compute type");
  desc.finalize("reduction descriptor finalize");
  auto op = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc, "reduction descriptor");
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, *x.desc, "reduction X");
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, *y.desc, "reduction Y");
  op->finalize("reduction operation finalize");
  ops_.push_back(op);
}

void GraphBuilder::reshape(const GraphTensor& x, const GraphTensor& y) {
  auto op = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, *x.desc, "reshape X");
  op->set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, *y.desc, "reshape Y");
  op->finalize("reshape operation finalize");
  ops_.push_back(op);
}

Descriptor GraphBuilder::finish() {
  auto graph = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  // cuDNN 9 marks the handle attribute deprecated but still reads it to pick the device. Without
  // a handle the graph finalizes against no device: the heuristics and plans then take a device
  // description instead (cudnn_engines), which is how graphs are checked on a machine with no GPU.
  if (handle_) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_, "graph handle");
#pragma GCC diagnostic pop
  }
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& op : ops_)
    raw.push_back(op->get());
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             static_cast<std::int64_t>(raw.size()), raw.data(), "graph operations");
  graph->finalize("operation graph finalize");
  return graph;
}

}  // namespace opbench
