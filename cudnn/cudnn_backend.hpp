#pragma once
// A thin layer over cuDNN's backend API (cudnnBackend* descriptors): owned descriptors, typed
// attribute setters, and the one graph builder every family's graphs are made with (attention's
// SDPA, memops' norms). The header-only cudnn-frontend is not installable here, and the raw API
// is all these graphs need.
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/version.hpp"

namespace opbench {

// For --version: the cuDNN the binary was built with (CUDNN_VERSION) and the one it loaded.
LibraryVersion cudnn_library_version();

// Throws run_failure naming the call, cuDNN's status and its last error message.
void cudnn_check(cudnnStatus_t status, const char* what);

// One backend descriptor, destroyed with its owner. Shared so that operations can keep the
// tensors they reference alive.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  ~BackendDescriptor();
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
           const void* values, const char* what);
  void set_int64(cudnnBackendAttributeName_t name, std::int64_t value, const char* what);
  void set_int64s(cudnnBackendAttributeName_t name, const std::vector<std::int64_t>& values,
                  const char* what);
  void set_bool(cudnnBackendAttributeName_t name, bool value, const char* what);
  void set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value, const char* what);
  void set_desc(cudnnBackendAttributeName_t name, const BackendDescriptor& value, const char* what);
  void finalize(const char* what);

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};
using Descriptor = std::shared_ptr<BackendDescriptor>;

// A tensor of the graph: its descriptor and the facts the builder needs to derive others.
struct GraphTensor {
  Descriptor desc;
  std::int64_t uid = 0;
  std::vector<std::int64_t> dims, strides;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
};

// Builds an operation graph: tensors (real, virtual or scalar by value), matmul, pointwise,
// reduction and reshape operations, in the order they are added.
class GraphBuilder {
 public:
  // `handle` may be null: the graph is then not tied to a device (see finish()).
  explicit GraphBuilder(cudnnHandle_t handle) : handle_(handle) {}

  // A tensor the caller passes a device pointer for, under `uid`.
  GraphTensor tensor(std::int64_t uid, std::vector<std::int64_t> dims,
                     std::vector<std::int64_t> strides, cudnnDataType_t type);
  // An intermediate that never leaves the fused kernel.
  GraphTensor virtual_tensor(std::vector<std::int64_t> dims, std::vector<std::int64_t> strides,
                             cudnnDataType_t type = CUDNN_DATA_FLOAT);
  // A scalar passed by value (its host address goes in the variant pack under `uid`).
  GraphTensor scalar(std::int64_t uid, cudnnDataType_t type);

  // c = a · b over the last two dimensions (broadcast over the leading ones); `c` given.
  void matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c);
  // y = mode(x [, b [, t]]); `compute` is the math precision, `axis` only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, const GraphTensor& x, const GraphTensor* b,
                 const GraphTensor* t, const GraphTensor& y,
                 cudnnDataType_t compute = CUDNN_DATA_FLOAT, std::int64_t axis = -1);
  void reduction(cudnnReduceTensorOp_t op, const GraphTensor& x, const GraphTensor& y);
  void reshape(const GraphTensor& x, const GraphTensor& y);
  // A finalized operation the caller made itself (a norm operation, say, whose many attributes
  // only its family knows): it joins the graph in the order added, and the builder keeps it alive.
  void add_operation(Descriptor op) { ops_.push_back(std::move(op)); }

  // Finalizes the operation graph of everything added so far.
  Descriptor finish();
  // The uids of the real and by-value tensors made: what a variant pack must name, no more.
  const std::vector<std::int64_t>& pack_uids() const { return pack_uids_; }

 private:
  std::int64_t next_virtual_uid_ = 1'000'000;
  cudnnHandle_t handle_;
  std::vector<Descriptor> ops_;
  // Tensors and operation descriptors stay alive as long as the builder: keep it beside the
  // plans made from its graph.
  std::vector<Descriptor> tensors_;
  std::vector<std::int64_t> pack_uids_;
};

// A finalized operation graph with the builder that owns its tensors and operations: keep them
// together (and beside any plan made from the graph). What every family's graph function returns.
struct CudnnGraph {
  std::unique_ptr<GraphBuilder> builder;
  Descriptor graph;
  // The uids of the tensors a variant pack must name.
  const std::vector<std::int64_t>& pack_uids() const { return builder->pack_uids(); }
};

// Row-major (packed) strides of `dims`.
std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims);

}  // namespace opbench
