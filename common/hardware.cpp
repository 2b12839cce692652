#include "common/hardware.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"

namespace opbench {

std::vector<DevicePeaks> load_hardware_table(const std::string& path) {
  const auto doc = load_json_file(path);
  std::vector<DevicePeaks> table;
  for_each_entry(doc, path, "name", [&](JsonEntry& e) {
    DevicePeaks d;
    d.name = e.get_string("name");
    d.source = e.get_string("source");
    for (const auto& m : e.get_array("match")) {
      if (!m.is_string() || m.get<std::string>().empty())
        e.fail("match", "every item must be a non-empty string");
      d.match.push_back(m.get<std::string>());
    }
    for (const auto& [dtype, value] : e.get_object("peak_tflops").items()) {
      if (!value.is_number() || !(value.get<double>() > 0))
        e.fail("peak_tflops",
               fmt::format("'{}' must be a positive number, got {}", dtype, describe_json(value)));
      try {
        d.peak_tflops[parse_dtype(dtype)] = value.get<double>();
      } catch (const Error& err) {
        e.fail("peak_tflops", err.what());
      }
    }
    if (e.has("mem_bw_gbps")) d.mem_bw_gbps = e.get_number_above("mem_bw_gbps", 0);
    if (e.has("memory_gib")) d.memory_gib = e.get_number_above("memory_gib", 0);
    e.reject_unknown_keys();
    table.push_back(std::move(d));
  });
  return table;
}

std::optional<DevicePeaks> match_device(const std::vector<DevicePeaks>& table,
                                        const std::string& device_name) {
  std::string name = to_lower(device_name);
  for (const auto& d : table)
    for (const auto& m : d.match)
      if (name.find(to_lower(m)) != std::string::npos) return d;
  return std::nullopt;
}

Peaks::Peaks(std::optional<DevicePeaks> device, PeakOverrides overrides)
    : device_(std::move(device)), overrides_(std::move(overrides)) {}

Peaks Peaks::for_device(const std::string& device_name, const PeakOverrides& overrides) {
  std::string path = overrides.hardware_config_path.empty() ? find_config_file("hardware.json")
                                                            : overrides.hardware_config_path;
  return Peaks(match_device(load_hardware_table(path), device_name), overrides);
}

std::optional<double> Peaks::tflops(DType t) const {
  if (overrides_.peak_tflops) return overrides_.peak_tflops;
  if (!device_) return std::nullopt;
  auto it = device_->peak_tflops.find(t);
  if (it == device_->peak_tflops.end()) return std::nullopt;
  return it->second;
}

std::optional<double> Peaks::bandwidth_gbps() const {
  if (overrides_.peak_bw_gbps) return overrides_.peak_bw_gbps;
  return device_ ? device_->mem_bw_gbps : std::nullopt;
}

std::string Peaks::describe() const {
  std::vector<std::string> parts;
  if (device_) parts.push_back(fmt::format("{} (hardware.json)", device_->name));
  if (overrides_.peak_tflops)
    parts.push_back(fmt::format("--peak-tflops {}", *overrides_.peak_tflops));
  if (overrides_.peak_bw_gbps)
    parts.push_back(fmt::format("--peak-bw {}", *overrides_.peak_bw_gbps));
  return parts.empty() ? "unknown" : join(parts, ", ");
}

}  // namespace opbench
