// cuDNN without a GPU: device descriptions finalize, our graphs finalize with no handle, and the
// reason of a refusal is read out of cuDNN's log records.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "attention/cudnn_sdpa_graph.hpp"
#include "common/device_profile.hpp"
#include "cudnn/cudnn_engines.hpp"

using namespace opbench;

TEST_CASE("every shipped device profile is a device description cuDNN accepts") {
  for (const char* name : {"a100", "h100", "h200", "b200"}) {
    INFO(name);
    CHECK_NOTHROW(make_device_description(load_device_profile(name).device.dump()));
  }
  nlohmann::json wrong = load_device_profile("h100").device;
  wrong["deviceVer"] = 90;  // not major*100 + minor*10: cuDNN knows no such architecture
  CHECK_THROWS(make_device_description(wrong.dump()));
}

namespace {
std::vector<std::int64_t> sorted_uids(const SdpaGraph& g) {
  std::vector<std::int64_t> u = g.pack_uids();
  std::sort(u.begin(), u.end());
  return u;
}
}  // namespace

// Finalized, and binding the tensors the form in attention/cudnn_sdpa_graph.hpp names: the
// causal mask's -inf fill, the backward's dO, gradients, softmax_sum and fp32 dQ scratch, and
// the sequence lengths by value only where the bottom-right band shifts (Sq < Skv).
TEST_CASE("the SDPA graphs finalize with no handle, forward and backward, GQA and MLA dims") {
  using U = std::vector<std::int64_t>;
  AttentionShape s;
  s.batch = 1;
  s.seqlen_q = s.seqlen_kv = 1024;
  s.heads_q = 32;
  s.heads_kv = 8;
  s.head_dim_qk = s.head_dim_v = 128;
  s.causal = true;
  const U forward{kUidQ, kUidK, kUidV, kUidO, kUidStats, kUidScale};
  U causal_forward = forward;
  causal_forward.push_back(kUidNegInf);
  const U backward{kUidQ,   kUidK,  kUidV,  kUidO,  kUidStats, kUidScale,      kUidNegInf,
                   kUidOne, kUidDO, kUidDQ, kUidDK, kUidDV,    kUidSoftmaxSum, kUidDQAccum};
  auto sorted = [](U u) {
    std::sort(u.begin(), u.end());
    return u;
  };
  CHECK(sorted_uids(build_sdpa_forward(nullptr, s)) == sorted(causal_forward));
  CHECK(sorted_uids(build_sdpa_backward(nullptr, s)) == sorted(backward));
  s.causal = false;
  CHECK(sorted_uids(build_sdpa_forward(nullptr, s)) == sorted(forward));
  s.causal = true;
  s.head_dim_qk = 192;
  s.seqlen_q = 512;  // bottom-right causal with Sq < Skv: the shift by value
  U shifted = backward;
  shifted.insert(shifted.end(), {kUidSeqKv, kUidSeqQ});
  CHECK(sorted_uids(build_sdpa_backward(nullptr, s)) == sorted(shifted));
}

TEST_CASE("a refusal's reason is the innermost Reason of each error stack, with its engine") {
  // A record as cuDNN 9.19 hands it to the callback (lines abridged).
  const std::vector<std::string> records{
      "CuDNN (v91900 56) function cudnnBackendGetAttribute() called:\n"
      "    Warning: No viable engine configs among (2) heuristics result(s).\n"
      "    === error stack (1/2) ===\n"
      "    engineConfig: type=json; val={\"engineId\":6,\"smVersion\":900};\n"
      "    Warning: CUDNN_STATUS_NOT_SUPPORTED_SHAPE; Reason: Embedding dim per head for q and k "
      "is not less than equal to 256 at: d_qk > 256\n"
      "    Warning: CUDNN_STATUS_NOT_SUPPORTED_SHAPE; Reason: generate_attention_desc()\n"
      "    === error stack (2/2) ===\n"
      "    engineConfig: type=json; val={\"engineId\":7,\"smVersion\":900};\n"
      "    Warning: CUDNN_STATUS_NOT_SUPPORTED_SHAPE; Reason: Embedding dim per head for q and k "
      "is not less than equal to 128 at: d_qk > 128\n"
      "    Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: ptr->isSupported()"};
  CHECK(cudnn_log_reason(records) ==
        "engine 6: Embedding dim per head for q and k is not less than equal to 256 at: d_qk > "
        "256; engine 7: Embedding dim per head for q and k is not less than equal to 128 at: "
        "d_qk > 128");
  CHECK(cudnn_log_reason({}).empty());
  CHECK(stopped_at_kernel_loading(
      "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER: cuLibraryLoadData returned error  (34) at: "
      "CUDA_SUCCESS != result"));
  CHECK_FALSE(stopped_at_kernel_loading("CUDNN_STATUS_NOT_SUPPORTED: d_qk > 256"));
}
