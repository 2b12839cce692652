#pragma once
// Device profiles: a GPU described in cuDNN's JSON representation of a device, so a dry run can
// plan for a GPU that is not here: cuDNN checks graphs and picks engines for it (bench_attention
// --dry-run --device-profile), and bench_gemm plans fp8 layouts by its compute capability.
// configs/cudnn_devices.json holds A100, H100, H200 and B200; a user may give a file with one
// profile object of the same form. Loading needs no CUDA.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace opbench {

struct DeviceProfile {
  std::string name;         // "h100", or the file's name
  std::string description;  // "NVIDIA H100 80GB HBM3 (SXM5), compute capability 9.0"
  std::vector<std::string> sources;
  nlohmann::json device;  // cuDNN's device JSON, validated
  int cc_major = 0, cc_minor = 0;
};

// The names of configs/cudnn_devices.json's profiles, comma-separated.
std::string builtin_device_profile_names();
// A profile by name (from configs/cudnn_devices.json) or from a JSON file holding one profile
// object. Bad input names the file, the entry and the key.
DeviceProfile load_device_profile(const std::string& name_or_path);
// Validates one profile object; `where` names it in errors.
DeviceProfile device_profile_from_json(const nlohmann::json& entry, const std::string& where);

}  // namespace opbench
