#include "cudnn/cudnn_engines.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

void set_target(BackendDescriptor& desc, cudnnBackendAttributeName_t handle_attr,
                cudnnBackendAttributeName_t device_attr, const CudnnTarget& target,
                const char* what) {
  if (target.device) {
    desc.set_desc(device_attr, *target.device, what);
  } else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    cudnnHandle_t handle = target.handle;
    desc.set(handle_attr, CUDNN_TYPE_HANDLE, 1, &handle, what);
#pragma GCC diagnostic pop
  }
}

// The first line of a message, trimmed.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
    line.pop_back();
  return line;
}

// cudnnBackendKnobType_t's names (cudnn_graph.h, 9.19), as cudnn-frontend prints them.
std::string knob_name(int type) {
  static const char* const kNames[] = {"SPLIT_K",
                                       "SWIZZLE",
                                       "TILE_SIZE",
                                       "USE_TEX",
                                       "EDGE",
                                       "KBLOCK",
                                       "LDGA",
                                       "LDGB",
                                       "CHUNK_K",
                                       "SPLIT_H",
                                       "WINO_TILE",
                                       "MULTIPLY",
                                       "SPLIT_K_BUF",
                                       "TILEK",
                                       "STAGES",
                                       "REDUCTION_MODE",
                                       "CTA_SPLIT_K_MODE",
                                       "SPLIT_K_SLC",
                                       "IDX_MODE",
                                       "SLICED",
                                       "SPLIT_RS",
                                       "SINGLEBUFFER",
                                       "LDGC",
                                       "SPECFILT",
                                       "KERNEL_CFG",
                                       "WORKSPACE",
                                       "TILE_CGA",
                                       "TILE_CGA_M",
                                       "TILE_CGA_N",
                                       "BLOCK_SIZE",
                                       "OCCUPANCY",
                                       "ARRAY_SIZE_PER_THREAD",
                                       "NUM_C_PER_BLOCK",
                                       "SPLIT_COLS",
                                       "TILE_ROWS",
                                       "TILE_COLS",
                                       "LOAD_SIZE",
                                       "CTA_COUNT",
                                       "STREAM_K",
                                       "SPLIT_P_SLC",
                                       "TILE_M",
                                       "TILE_N",
                                       "WARP_SPEC_CFG",
                                       "SWAP_AB"};
  constexpr int kKnown = static_cast<int>(sizeof(kNames) / sizeof(kNames[0]));
  return type >= 0 && type < kKnown ? kNames[type] : fmt::format("KNOB_{}", type);
}

}  // namespace

Descriptor make_device_description(const std::string& json) {
  auto device = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  device->set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
              static_cast<std::int64_t>(json.size()), json.data(), "device description JSON");
  device->finalize("device description finalize");
  return device;
}

CudnnLogCapture::CudnnLogCapture() {
  cudnnGetCallback(&old_mask_, &old_data_, &old_fn_);
  cudnnSetCallback(CUDNN_SEV_ERROR_EN | CUDNN_SEV_WARNING_EN, this, &CudnnLogCapture::on_message);
}

CudnnLogCapture::~CudnnLogCapture() {
  cudnnSetCallback(old_mask_, old_data_, old_fn_);
}

void CudnnLogCapture::on_message(cudnnSeverity_t, void* data, const cudnnDebug_t*,
                                 const char* message) {
  if (!data || !message) return;
  // cuDNN hands the callback one record as several NUL-terminated lines, the last followed by an
  // empty one ("...called:\0e! Error: ...; Reason: ...\0\0"): join them.
  std::string record;
  for (const char* line = message; *line; line += std::strlen(line) + 1) {
    if (!record.empty()) record += '\n';
    record += line;
  }
  static_cast<CudnnLogCapture*>(data)->messages_.push_back(record);
}

std::string cudnn_log_reason(const std::vector<std::string>& records) {
  // A record lists error stacks, innermost first: "Reason: <condition> at: <check>" is the line
  // that explains a refusal ("... at: d_qk > 256"); the lines after it name the functions it
  // unwound through. Keep the first reason of each stack, prefixed with the engine the stack
  // belongs to when cuDNN names one, each once and in order.
  std::vector<std::string> reasons;
  for (const auto& record : records) {
    std::string engine;
    bool stack_open = true;
    std::size_t begin = 0;
    while (begin <= record.size()) {
      std::size_t end = record.find('\n', begin);
      if (end == std::string::npos) end = record.size();
      const std::string line = record.substr(begin, end - begin);
      begin = end + 1;
      if (line.find("=== error stack") != std::string::npos) {
        stack_open = true;
        engine.clear();
      } else if (auto at = line.find("\"engineId\":"); at != std::string::npos) {
        engine = "engine " +
                 line.substr(at + 11, line.find_first_not_of("0123456789", at + 11) - (at + 11)) +
                 ": ";
      } else if (auto at = line.find("Reason: "); at != std::string::npos && stack_open) {
        std::string r = engine + first_line(line.substr(at + 8));
        if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
        stack_open = false;
      }
      if (end == record.size()) break;
    }
  }
  if (reasons.empty()) return records.empty() ? "" : first_line(records.back());
  return join(reasons, "; ");
}

std::string CudnnLogCapture::reason() const {
  return cudnn_log_reason(messages_);
}

std::vector<Descriptor> heuristic_configs(const BackendDescriptor& graph, const CudnnTarget& target,
                                          int max_configs, std::int64_t* offered) {
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph");
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
  if (target.device)
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, *target.device, "heuristics device");
  heur.finalize("heuristics finalize");
  std::int64_t count = 0;
  cudnn_check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "heuristics result count");
  if (offered) *offered = count;
  count = std::min<std::int64_t>(count, max_configs);
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.push_back(std::make_shared<BackendDescriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  std::int64_t returned = 0;
  if (count > 0)
    cudnn_check(
        cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()),
        "heuristics results");
  configs.resize(static_cast<std::size_t>(returned));
  return configs;
}

Descriptor make_plan(const BackendDescriptor& config, const CudnnTarget& target) {
  auto plan = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set_target(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, target,
             "plan device");
  plan->set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config, "plan configuration");
  plan->finalize("execution plan finalize");
  return plan;
}

std::int64_t plan_workspace_bytes(const BackendDescriptor& plan) {
  std::int64_t bytes = 0, count = 0;
  cudnn_check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &count, &bytes),
              "plan workspace size");
  return bytes;
}

std::int64_t engine_index(const BackendDescriptor& config) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  std::int64_t count = 0;
  cudnn_check(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw),
              "engine of a configuration");
  std::int64_t index = -1;
  cudnn_check(cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                       &count, &index),
              "engine index");
  return index;
}

std::string engine_knobs(const BackendDescriptor& config) {
  constexpr int kMaxKnobs = 32;
  std::vector<Descriptor> choices;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < kMaxKnobs; ++i) {
    choices.push_back(std::make_shared<BackendDescriptor>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    raw.push_back(choices.back()->get());
  }
  std::int64_t count = 0;
  cudnn_check(
      cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxKnobs, &count, raw.data()),
      "knob choices of a configuration");
  std::vector<std::string> knobs;
  for (std::int64_t i = 0; i < count; ++i) {
    cudnnBackendKnobType_t type{};
    std::int64_t value = 0, n = 0;
    cudnn_check(cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                         CUDNN_TYPE_KNOB_TYPE, 1, &n, &type),
                "knob type");
    cudnn_check(cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                         CUDNN_TYPE_INT64, 1, &n, &value),
                "knob value");
    knobs.push_back(fmt::format("{}={}", knob_name(static_cast<int>(type)), value));
  }
  return join(knobs, " ");
}

bool stopped_at_kernel_loading(const std::string& message) {
  // The stub answers every driver call with CUDA_ERROR_STUB_LIBRARY (34).
  // cuDNN 9.19 reports it as "cuLibraryLoadData returned error  (34)".
  return message.find("cuLibraryLoadData returned error") != std::string::npos &&
         message.find("(34)") != std::string::npos;
}

std::vector<EngineVerdict> survey_configs(const std::vector<Descriptor>& configs,
                                          const CudnnTarget& target, int enough_accepted) {
  std::vector<EngineVerdict> verdicts;
  int accepted = 0;
  for (const auto& config : configs) {
    if (accepted >= enough_accepted) break;
    EngineVerdict v;
    v.engine = engine_index(*config);
    v.knobs = engine_knobs(*config);
    CudnnLogCapture log;
    try {
      make_plan(*config, target);
      v.accepted = true;
    } catch (const Error& e) {
      const std::string logged = log.reason();
      const std::string message = e.what() + (logged.empty() ? "" : " [" + logged + "]");
      v.accepted = stopped_at_kernel_loading(message);
      if (!v.accepted) v.refusal = message;
    }
    accepted += v.accepted;
    verdicts.push_back(v);
  }
  return verdicts;
}

std::string load_cuda_driver_or_stub() {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) return "driver";
  std::vector<std::filesystem::path> candidates;
#ifdef OPBENCH_CUDA_STUB_DIR
  candidates.emplace_back(std::filesystem::path(OPBENCH_CUDA_STUB_DIR) / "libcuda.so");
#endif
  if (const char* home = std::getenv("CUDA_HOME"))
    candidates.emplace_back(std::filesystem::path(home) / "lib64/stubs/libcuda.so");
  candidates.emplace_back("/usr/local/cuda/lib64/stubs/libcuda.so");
  for (const auto& path : candidates) {
    // The stub's soname is libcuda.so.1: once loaded, cuDNN's own dlopen("libcuda.so.1") gets it.
    if (std::filesystem::exists(path) && dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))
      return "toolkit stub " + path.string();
  }
  throw run_failure(
      "cuDNN needs libcuda.so.1 to list its engines: there is no NVIDIA driver here and no CUDA "
      "toolkit stub (lib64/stubs/libcuda.so) under the build's toolkit, $CUDA_HOME or "
      "/usr/local/cuda");
}

}  // namespace opbench
