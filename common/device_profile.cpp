#include "common/device_profile.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <limits>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// Every key cuDNN 9.19 reads from a device description (it names a missing one with
// CUDNN_LOGERR_DBG=1), with the range a real GPU's value lies in.
struct DeviceKey {
  const char* key;
  std::int64_t min, max;
};
constexpr DeviceKey kIntegerKeys[] = {
    {"deviceVer", 500, 2000},  // compute capability major*100 + minor*10
    {"driverVer", 0, 100000},
    {"cudaDeviceId", 0, 1024},
    {"multiProcessorCount", 1, 10000},
    {"l2CacheSize", 1, std::int64_t{1} << 34},
    {"totalGlobalMem", 1, std::int64_t{1} << 50},
    {"maxSharedMemoryPerBlock", 1, std::int64_t{1} << 24},
    {"maxSharedMemoryPerBlockOptin", 1, std::int64_t{1} << 24},
    {"reservedSharedMemoryPerBlock", 0, std::int64_t{1} << 24},
    {"regsPerBlock", 1, std::int64_t{1} << 24},
    {"maxRegistersPerSM", 1, std::int64_t{1} << 24},
    {"warpSize", 1, 1024},
    {"maxThreadsPerBlock", 1, 1 << 16},
    {"maxThreadsPerSM", 1, 1 << 16},
    {"maxCtasPerSM", 1, 1024},
    {"smClockRateKHz", 1, 10'000'000},
    {"memClockRateKHz", 1, 100'000'000},
    {"pciDeviceId", 0, kInt32Max},
    {"isTccDriver", 0, 1},
    {"supportCoopLaunch", 0, 1},
};

}  // namespace

std::string builtin_device_profile_names() {
  const std::string path = find_config_file("cudnn_devices.json");
  const nlohmann::json profiles = load_json_file(path);
  std::vector<std::string> names;
  for (const auto& entry : expect_entry_list(profiles, path))
    if (entry.is_object() && entry.contains("name") && entry["name"].is_string())
      names.push_back(entry["name"].get<std::string>());
  return join(names, ", ");
}

DeviceProfile device_profile_from_json(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object())
    throw bad_input(
        fmt::format("{}: expected a profile object {{name, description, sources, "
                    "device}}, got {}",
                    where, describe_json(object)));
  JsonEntry entry(object, where);
  DeviceProfile p;
  p.name = entry.get_string("name");
  p.description = entry.get_string("description");
  for (const auto& s : entry.get_array("sources")) {
    if (!s.is_string()) entry.fail("sources", "expected a list of strings");
    p.sources.push_back(s.get<std::string>());
  }
  if (p.sources.empty()) entry.fail("sources", "name at least one source for the values");
  JsonEntry device(entry.get_object("device"), where + ": key 'device'");
  p.device = nlohmann::json::object();
  p.device["deviceName"] = device.get_string("deviceName");
  for (const DeviceKey& k : kIntegerKeys)
    p.device[k.key] = device.get_int(k.key, k.min, k.max);
  for (const char* key : {"maxGridSize", "maxBlockSize"}) {
    const auto& dims = device.get_array(key);
    if (dims.size() != 3) device.fail(key, "expected a list of three integers (x, y, z)");
    for (const auto& d : dims)
      if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > kInt32Max)
        device.fail(key,
                    fmt::format("expected integers in 1..{}, got {}", kInt32Max, describe_json(d)));
    p.device[key] = dims;
  }
  device.reject_unknown_keys();
  entry.reject_unknown_keys();
  const std::int64_t ver = p.device["deviceVer"].get<std::int64_t>();
  p.cc_major = static_cast<int>(ver / 100);
  p.cc_minor = static_cast<int>(ver % 100 / 10);
  return p;
}

DeviceProfile load_device_profile(const std::string& name_or_path) {
  const std::string builtin = find_config_file("cudnn_devices.json");
  const nlohmann::json profiles = load_json_file(builtin);
  const auto& list = expect_entry_list(profiles, builtin);
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].is_object() && list[i].value("name", "") == to_lower(name_or_path))
      return device_profile_from_json(list[i], entry_where(builtin, i, list[i], "name"));
  if (!std::filesystem::exists(name_or_path))
    throw bad_input(fmt::format("--device-profile: '{}' is neither a profile of {} ({}) nor a file",
                                name_or_path, builtin, builtin_device_profile_names()));
  return device_profile_from_json(load_json_file(name_or_path), name_or_path);
}

}  // namespace opbench
